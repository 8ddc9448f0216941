import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";

function cosine(a: number[], b: number[]): number {
  return a.reduce((sum, v, i) => sum + v * b[i]!, 0);
}

describe("fake OpenAI server: embeddings", () => {
  let fake: FakeOpenAI;
  let client: OpenAI;

  beforeAll(async () => {
    fake = await startFakeOpenAI({ embeddingDimensions: 64 });
    client = new OpenAI({ baseURL: fake.baseUrl, apiKey: "test-key", maxRetries: 0 });
  });
  afterAll(async () => fake.close());
  beforeEach(() => fake.reset());

  it("answers float vectors, normalised, deterministic and close for texts sharing words", async () => {
    const result = await client.embeddings.create({
      model: "text-embedding-3-small",
      input: ["The red planet Mars", "Mars is a red planet", "Banana bread recipe"],
      encoding_format: "float",
    });
    expect(result.object).toBe("list");
    expect(result.model).toBe("text-embedding-3-small");
    expect(result.usage.prompt_tokens).toBeGreaterThan(0);
    const [mars, mars2, bread] = result.data.map((d) => d.embedding);
    expect(result.data.map((d) => d.index)).toEqual([0, 1, 2]);
    expect(mars).toHaveLength(64);
    expect(Math.hypot(...mars!)).toBeCloseTo(1, 6);
    expect(cosine(mars!, mars2!)).toBeGreaterThan(cosine(mars!, bread!));

    const again = await client.embeddings.create({ model: "text-embedding-3-small", input: "The red planet Mars", encoding_format: "float" });
    expect(again.data[0]!.embedding).toEqual(mars);
    expect(fake.requests.map((r) => r.path)).toEqual(["/v1/embeddings", "/v1/embeddings"]);
  });

  it("answers base64 float32 when the openai package asks (its default) and honours dimensions", async () => {
    const floats = await client.embeddings.create({ model: "m", input: "hello world", dimensions: 16, encoding_format: "float" });
    const decoded = await client.embeddings.create({ model: "m", input: "hello world", dimensions: 16 });
    expect((fake.requests[1]!.body as { encoding_format: string }).encoding_format).toBe("base64");
    expect(decoded.data[0]!.embedding).toHaveLength(16);
    decoded.data[0]!.embedding.forEach((v, i) => expect(v).toBeCloseTo(floats.data[0]!.embedding[i]!, 6));
  });

  it("fails the next call with the status asked for", async () => {
    fake.embeddings.next({ status: 503 });
    await expect(client.embeddings.create({ model: "m", input: "x" })).rejects.toMatchObject({ status: 503 });
    const ok = await client.embeddings.create({ model: "m", input: "x" });
    expect(ok.data[0]!.embedding).toHaveLength(64);
  });
});
