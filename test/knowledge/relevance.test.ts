import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { expectApiError } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { CORPUS, QUESTIONS, insertPersona, query, ready, results } from "./helpers.ts";

// Relevance of the hybrid search on a small corpus of distinct subjects: each question finds its
// own document's chunk first, with the offline embedder and with an OpenAI-compatible provider.
const setups: { name: string; env: (fake: FakeOpenAI) => Record<string, string> }[] = [
  { name: "the offline hashed lexical embedder", env: () => ({ LLM_PROVIDER: "local", EMBEDDINGS_PROVIDER: "local" }) },
  {
    name: "the OpenAI embeddings API (fake server)",
    env: (fake) => ({ LLM_PROVIDER: "openai", EMBEDDINGS_PROVIDER: "openai", OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "test", LLM_MAX_RETRIES: "0" }),
  },
];

describe.each(setups)("with $name", ({ name, env }) => {
  let fake: FakeOpenAI;
  let service: TestService;
  let alice: TestUser;
  let personaId: string;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    service = await startTestService({ env: { ...env(fake), RATE_LIMIT_PER_MINUTE: "100000", EMBEDDINGS_BATCH_SIZE: "2" } });
    alice = await registerUser(service);
    await service.services.db.knex("users").where({ id: alice.id }).update({ plan: "creator" });
    personaId = await insertPersona(service, alice);
    await Promise.all(Object.entries(CORPUS).map(([filename, text]) => ready(service, alice, personaId, filename, text)));
  });

  afterAll(async () => {
    await service?.close();
    await fake?.close();
  });

  it.each(QUESTIONS)("%s -> %s first", async (question, filename) => {
    const found = await results(service, alice, personaId, question);
    expect(found.length).toBeGreaterThan(0);
    expect(found[0]!.filename).toBe(filename);
    for (const result of found) {
      expect(result.similarity).toBeGreaterThanOrEqual(0);
      expect(result.similarity).toBeLessThanOrEqual(1);
    }
  });

  it("honours limit, and answers every ready document's chunks at most once", async () => {
    const one = await results(service, alice, personaId, "planets and bread and sails", 1);
    expect(one).toHaveLength(1);
    // A word of each document: the chess document never says "chess", and only relevant chunks are found (issue 34 item 5).
    const all = await results(service, alice, personaId, "Mars sourdough sailboat hive Sicilian", 20);
    expect(new Set(all.map((r) => r.chunk_id)).size).toBe(all.length);
    expect(new Set(all.map((r) => r.filename))).toEqual(new Set(Object.keys(CORPUS)));
  });

  it("rejects a limit outside 1..20 and an empty query", async () => {
    for (const body of [{ query: "x", limit: 0 }, { query: "x", limit: 21 }, { query: "" }]) {
      await expectApiError(service.clientFor(alice).POST("/v1/knowledge/{persona_id}/query", { params: { path: { persona_id: personaId } }, body }), 400, "invalid_request");
    }
  });

  if (name.startsWith("the OpenAI")) {
    it("embedded in batches of EMBEDDINGS_BATCH_SIZE, and the query through the same model", async () => {
      const calls = fake.requests.filter((r) => r.path === "/v1/embeddings");
      expect(calls.length).toBeGreaterThan(Object.keys(CORPUS).length);
      for (const call of calls) {
        const body = call.body as { model: string; input: string[] };
        expect(body.model).toBe("text-embedding-3-small");
        expect(body.input.length).toBeLessThanOrEqual(2);
      }
    });

    it("answers 502 upstream_error when the embeddings provider fails a query", async () => {
      fake.embeddings.next({ status: 500 });
      await expectApiError(query(service, alice, personaId, "Venus"), 502, "upstream_error");
    });
  }
});
