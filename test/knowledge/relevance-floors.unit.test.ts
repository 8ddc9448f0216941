import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../server/toolkit/config.ts";
import { ADA_MIN_SIMILARITY, LOCAL_MIN_SIMILARITY, MIN_TEXT_RANK, OPENAI_MIN_SIMILARITY, relevanceFloors } from "../../server/areas/knowledge/relevance.ts";

// Issue 34 item 5: the absolute relevance floors, per embeddings provider and model, and their setting.
describe("relevance floors", () => {
  it("default to the embeddings provider's and model's own scale", () => {
    expect(relevanceFloors(loadConfig({}))).toEqual({ similarity: LOCAL_MIN_SIMILARITY, textRank: MIN_TEXT_RANK });
    expect(relevanceFloors(loadConfig({ EMBEDDINGS_PROVIDER: "openai" }))).toEqual({ similarity: OPENAI_MIN_SIMILARITY, textRank: MIN_TEXT_RANK });
    expect(relevanceFloors(loadConfig({ EMBEDDINGS_PROVIDER: "openai", EMBEDDINGS_MODEL: "text-embedding-3-large" })).similarity).toBe(OPENAI_MIN_SIMILARITY);
    expect(relevanceFloors(loadConfig({ EMBEDDINGS_PROVIDER: "openai", EMBEDDINGS_MODEL: "text-embedding-ada-002" })).similarity).toBe(ADA_MIN_SIMILARITY);
    expect([LOCAL_MIN_SIMILARITY, OPENAI_MIN_SIMILARITY, ADA_MIN_SIMILARITY, MIN_TEXT_RANK]).toEqual([0.15, 0.3, 0.8, 0.1]);
  });

  it("take KNOWLEDGE_MIN_SIMILARITY over any default", () => {
    expect(relevanceFloors(loadConfig({ KNOWLEDGE_MIN_SIMILARITY: "0.42" })).similarity).toBe(0.42);
    expect(relevanceFloors(loadConfig({ EMBEDDINGS_PROVIDER: "openai", EMBEDDINGS_MODEL: "text-embedding-ada-002", KNOWLEDGE_MIN_SIMILARITY: "0" })).similarity).toBe(0);
  });

  it("refuse a KNOWLEDGE_MIN_SIMILARITY outside 0..1", () => {
    for (const value of ["-0.1", "1.5", "high"]) {
      expect(() => loadConfig({ KNOWLEDGE_MIN_SIMILARITY: value })).toThrow(ConfigError);
    }
  });
});
