import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { databaseKind } from "../support/service.ts";
import { call, freshStore, register, startPersona, until, type Proc, type Store } from "./support.ts";

// A job worker killed (SIGKILL) in the middle of a knowledge document's processing: after a
// restart the document must end `ready` (or `failed`, honestly), never stay `processing`.
// On PostgreSQL the API and the worker are separate processes and only the worker dies; on the
// embedded default one process holds the data dir, so that process is killed and restarted.

let fake: FakeOpenAI;
let store: Store;
const procs: Proc[] = [];

beforeAll(async () => {
  fake = await startFakeOpenAI();
  store = await freshStore();
});
afterAll(async () => {
  for (const proc of procs) await proc.kill9();
  await fake?.close();
  await store?.drop();
});

const env = () => ({ ...store.env, EMBEDDINGS_PROVIDER: "openai", OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test-secret-key", LLM_MAX_RETRIES: "0" });
const track = (proc: Proc) => (procs.push(proc), proc);

describe(`a worker killed during knowledge ingestion (${databaseKind})`, () => {
  it("leaves no document stuck in processing after a restart", { timeout: 180_000 }, async () => {
    const separate = databaseKind === "postgres";
    const api = track(await startPersona(separate ? ["serve", "--no-worker"] : ["serve"], env()));
    const worker = separate ? track(await startPersona(["worker"], env(), { probe: false })) : api;
    const user = await register(api.url);
    const persona = await call(api.url, user.auth, "POST", "/v1/personas", { name: "Archivist", instructions: "You keep the archive." });
    expect(persona.status).toBe(201);

    // The first embeddings call hangs, so the kill lands while the document is being processed.
    fake.embeddings.next({ firstTokenDelayMs: 600_000 });
    const form = new FormData();
    form.append("file", new Blob(["The archive holds the star charts of the old fleet.\n".repeat(50)]), "charts.txt");
    const uploaded = await fetch(`${api.url}/v1/knowledge/${persona.body.id}/documents`, { method: "POST", headers: user.auth, body: form });
    expect(uploaded.status).toBe(202);
    const documentId = ((await uploaded.json()) as { id: string }).id;
    await until("the embeddings call", async () => fake.requests.some((request) => request.path === "/v1/embeddings"));
    const during = await call(api.url, user.auth, "GET", `/v1/knowledge/${persona.body.id}/documents/${documentId}`);
    expect(during.body.status).toBe("processing");

    await worker.kill9();
    const restarted = separate ? track(await startPersona(["worker"], env(), { probe: false })) : track(await startPersona(["serve"], env(), { port: Number(new URL(api.url).port) }));
    const url = separate ? api.url : restarted.url;
    const final = await until(
      "the document leaves processing",
      async () => {
        const got = await call(url, user.auth, "GET", `/v1/knowledge/${persona.body.id}/documents/${documentId}`);
        return got.body.status !== "processing" && got.body.status !== "pending" ? got.body : undefined;
      },
      90_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${restarted.output()}`);
    });
    expect(final.status).toBe("ready");
    expect(final.chunk_count).toBeGreaterThan(0);
  });
});
