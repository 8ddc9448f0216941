import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { createApiClient } from "../support/api.ts";
import { expectOk } from "../support/assertions.ts";
import { databaseKind } from "../support/service.ts";
import { freshStore, register, sleep, startPersona, until, type Proc, type Store } from "./support.ts";

// The API process killed (SIGKILL) while a reply is being generated, once in a blocking send and
// once in a stream. The documented rules (docs/adr/0108, 0109 and 0126):
// a blocking send stores its input and reply together, so a send cut short stores nothing; a
// stream stores its input first, and that input stays without a reply when the stream breaks.
// The quota is reserved before the model is asked, with a lease: a release job queued in the same
// statement gives the message back once its time is up unless the reply was stored
// (docs/adr/0096). So after a crash the counter comes back to what was stored;
// the lease is short here (QUOTA_LEASE_SECONDS) so that the test waits seconds, not minutes.

let fake: FakeOpenAI;
let store: Store;
let api: Proc;
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

const env = () => ({ ...store.env, OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test-secret-key", LLM_MAX_RETRIES: "0", QUOTA_LEASE_SECONDS: String(LEASE_SECONDS) });
const LEASE_SECONDS = 3;
// The conversation has a title, so no title job asks the model in between (it would take the
// behaviour queued for the send).
const chatCalls = () => fake.requests.filter((request) => request.path === "/v1/chat/completions").length;

async function restart(): Promise<void> {
  await api.kill9();
  api = await startPersona(["serve"], env(), { port: Number(new URL(api.url).port) });
  procs.push(api);
}

describe(`the API killed mid-reply (${databaseKind})`, () => {
  it("stores no half exchange, and the quota comes back to the stored replies once the leases of the ones cut short ran out", { timeout: 240_000 }, async () => {
    api = await startPersona(["serve"], env());
    procs.push(api);
    const user = await register(api.url);
    // The restarted process listens on the same port, so the client stays valid across restarts.
    const client = createApiClient(api.url, user.auth);
    const persona = await expectOk(client.POST("/v1/personas", { body: { name: "Nova", instructions: "You are Nova." } }), 201);
    const conversation = await client.POST("/v1/conversations", { body: { persona_id: persona.id, title: "Crash" } });
    expect(conversation.response.status).toBe(201);
    const id = conversation.data!.id;
    // Oldest first (the list answers newest first).
    // The exchanged messages: the conversation's greeting is stored before any of them.
    const messages = async () => (await expectOk(client.GET("/v1/conversations/{id}/messages", { params: { path: { id }, query: { limit: 100 } } }))).data.reverse().filter((message) => !message.greeting);
    const used = async () => (await expectOk(client.GET("/v1/billing/usage"))).usage.messages_sent;
    const send = (content: string) => client.POST("/v1/conversations/{id}/messages", { params: { path: { id } }, body: { content } });

    const answered = await send("first");
    expect(answered.response.status).toBe(201);
    const before = await messages();
    expect(before.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(await used()).toBe(1);

    // Blocking: the model never answers before the kill.
    fake.chat.next({ firstTokenDelayMs: 600_000 });
    const calls = chatCalls();
    const blocking = send("cut short").catch((error: Error) => error);
    await until("the blocking send reaches the model", async () => chatCalls() > calls && JSON.stringify(fake.requests.at(-1)?.body).includes("cut short"));
    await restart();
    expect(await blocking).toBeInstanceOf(Error);
    expect(await messages(), "a blocking send cut short stores nothing").toEqual(before);
    // Counted until its lease runs out, then given back by the restarted process's worker.
    await until("the blocking send's message is given back", async () => (await used()) === 1);

    // Stream: killed after a few deltas reached the client (the input is stored while the model is
    // asked, so by then it has been written).
    fake.chat.next({ chunks: Array.from({ length: 200 }, (_, n) => `word${n} `), chunkDelayMs: 200 });
    const { response } = await client.POST("/v1/conversations/{id}/messages/stream", { params: { path: { id } }, body: { content: "streamed" }, parseAs: "stream" });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    let text = "";
    while ((text.match(/event: delta/g) ?? []).length < 5) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`stream ended early: ${text}`);
      text += new TextDecoder().decode(value);
    }
    await restart();
    await reader.read().then(
      function drain(result): Promise<unknown> | undefined {
        return result.done ? undefined : reader.read().then(drain);
      },
      () => undefined,
    );
    const after = await messages();
    expect(after.slice(0, 2)).toEqual(before);
    expect(after.slice(2).map((message) => [message.role, message.content]), "the streamed input stays, without a reply").toEqual([["user", "streamed"]]);
    await until("the stream's message is given back", async () => (await used()) === 1);
    expect(after.filter((message) => message.role === "assistant")).toHaveLength(1);

    // The service goes on normally after the crashes.
    const again = await send("after");
    expect(again.response.status).toBe(201);
    expect((await messages()).slice(-2).map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(await used()).toBe(2);
    // A stored reply keeps its message after its lease's time (its job was removed, or finds it):
    // the fixed time is the point, letting the lease run out.
    await sleep((LEASE_SECONDS + 2) * 1000);
    expect(await used()).toBe(2);
  });
});
