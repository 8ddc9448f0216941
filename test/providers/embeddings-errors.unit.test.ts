import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OpenAIEmbeddings } from "../../server/toolkit/providers/embeddings/openai.ts";
import { UpstreamError } from "../../server/toolkit/providers/errors.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";

// The embeddings provider's failures say what happened without repeating the provider's own text,
// which can carry part of the API key (OpenAI's 401 does) into document errors users can read.
let fake: FakeOpenAI;
let embeddings: OpenAIEmbeddings;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  embeddings = new OpenAIEmbeddings(
    { provider: "openai", baseUrl: fake.baseUrl, apiKey: "sk-secret-key-1234", model: "text-embedding-3-small", batchSize: 8 },
    { provider: "openai", baseUrl: fake.baseUrl, apiKey: "sk-secret-key-1234", model: "m", models: ["m"], contextTokens: 8192, maxOutputTokens: 64, timeoutMs: 2000, maxRetries: 0 },
  );
});

afterAll(async () => {
  await fake?.close();
});

describe("embeddings provider errors", () => {
  it("keep the status and a short code, never the upstream's message", async () => {
    fake.embeddings.next({ status: 401, errorBody: { error: { message: "Incorrect API key provided: sk-secr***1234", type: "invalid_request_error", code: "invalid_api_key" } } });
    const error = await embeddings.embed(["hello"]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).status).toBe(401);
    expect((error as Error).message).toMatch(/^The embeddings provider answered 401 \(invalid_api_key\)\. Embeddings are set by EMBEDDINGS_BASE_URL/);
    expect((error as Error).message).not.toContain("sk-");
  });
});
