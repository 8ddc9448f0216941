import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../server/toolkit/config.ts";
import { LocalEmbeddings, lexicalEmbedding, stem } from "../../server/toolkit/providers/embeddings/local.ts";
import { OpenAIEmbeddings } from "../../server/toolkit/providers/embeddings/openai.ts";
import { EMBEDDING_DIMENSIONS } from "../../server/toolkit/providers/embeddings/types.ts";
import { UpstreamError } from "../../server/toolkit/providers/errors.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";

// The two embeddings providers: the offline hashed lexical one, and the `openai` package one
// against the fake server (padding, asking for 1536 dimensions, failures).
const cosine = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * b[i]!, 0);
const norm = (a: number[]) => Math.sqrt(cosine(a, a));

describe("the offline embedder", () => {
  it("is deterministic, 1536-dimensional and unit length", async () => {
    const { vectors, model } = await new LocalEmbeddings().embed(["Venus orbits the Sun", "Venus orbits the Sun", ""]);
    expect(model).toBe("local-hashed-lexical-v1");
    expect(vectors[0]).toEqual(vectors[1]);
    for (const vector of vectors) {
      expect(vector).toHaveLength(EMBEDDING_DIMENSIONS);
      expect(norm(vector)).toBeCloseTo(1, 6);
    }
  });

  it("puts texts on one subject closer than texts on different subjects", () => {
    const planets = lexicalEmbedding("The planets orbiting the Sun: Venus and Mars");
    const planet = lexicalEmbedding("Which planet orbits closest to the sun?");
    const bread = lexicalEmbedding("Knead the bread dough and let it rise");
    expect(cosine(planets, planet)).toBeGreaterThan(cosine(planets, bread) + 0.2);
  });

  it("stems lightly and consistently", () => {
    expect(stem("planets")).toBe(stem("planet"));
    expect(stem("orbiting")).toBe(stem("orbit"));
    expect(stem("running")).toBe("run");
    expect(stem("glass")).toBe("glass");
  });
});

describe("the OpenAI embeddings provider", () => {
  let small: FakeOpenAI;
  let large: FakeOpenAI;
  const provider = (fake: FakeOpenAI, model = "text-embedding-3-small") => {
    const config = loadConfig({ EMBEDDINGS_PROVIDER: "openai", OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "test", EMBEDDINGS_MODEL: model, LLM_MAX_RETRIES: "0" });
    return new OpenAIEmbeddings(config.embeddings, config.llm);
  };

  beforeAll(async () => {
    small = await startFakeOpenAI({ embeddingDimensions: 768 });
    large = await startFakeOpenAI({ embeddingDimensions: 3072 });
  });

  afterAll(async () => {
    await small?.close();
    await large?.close();
  });

  it("zero-pads a smaller model's vectors to 1536, keeping input order", async () => {
    const { vectors, inputTokens } = await provider(small, "nomic-embed-text").embed(["first text", "second text"]);
    expect(vectors).toHaveLength(2);
    for (const vector of vectors) {
      expect(vector).toHaveLength(EMBEDDING_DIMENSIONS);
      expect(vector.slice(768).every((x) => x === 0)).toBe(true);
      expect(norm(vector)).toBeCloseTo(1, 5);
    }
    expect(vectors[0]).not.toEqual(vectors[1]);
    expect(inputTokens).toBeGreaterThan(0);
    expect((small.requests.at(-1)!.body as { dimensions?: number }).dimensions).toBeUndefined();
  });

  it("asks a larger model for 1536 dimensions: at once when known, after the first answer otherwise", async () => {
    const known = await provider(large, "text-embedding-3-large").embed(["a"]);
    expect(known.vectors[0]).toHaveLength(EMBEDDING_DIMENSIONS);
    expect(large.requests.map((r) => (r.body as { dimensions?: number }).dimensions)).toEqual([1536]);
    large.reset();
    const unknown = provider(large, "some-large-model");
    await unknown.embed(["a"]);
    await unknown.embed(["b"]);
    expect(large.requests.map((r) => (r.body as { dimensions?: number }).dimensions)).toEqual([undefined, 1536, 1536]);
  });

  it("throws UpstreamError with the status when the provider fails", async () => {
    small.embeddings.next({ status: 429 });
    const error = await provider(small).embed(["x"]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).status).toBe(429);
  });
});
