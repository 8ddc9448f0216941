import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { databaseKind } from "../support/service.ts";
import { call, freshStore, register, sleep, startPersona, until, type Proc, type Store } from "./support.ts";

// The API process killed (SIGKILL) while a reply is being generated, once in a blocking send and
// once in a stream. The documented rules (docs/decisions.md, "Blocking send", "Streamed send"):
// a blocking send stores its input and reply together, so a send cut short stores nothing; a
// stream stores its input first, and that input stays without a reply when the stream breaks.
// The quota is reserved before the model is asked, with a lease: a release job queued in the same
// statement gives the message back once its time is up unless the reply was stored
// (docs/decisions.md, "Resilience"). So after a crash the counter comes back to what was stored;
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
    const persona = await call(api.url, user.auth, "POST", "/v1/personas", { name: "Nova", instructions: "You are Nova." });
    const conversation = await call(api.url, user.auth, "POST", "/v1/conversations", { persona_id: persona.body.id, title: "Crash" });
    expect(conversation.status).toBe(201);
    const path = `/v1/conversations/${conversation.body.id}/messages`;
    // Oldest first (the list answers newest first).
    const messages = async () => ((await call(api.url, user.auth, "GET", `${path}?limit=100`)).body.data as { role: string; content: string }[]).reverse();
    const used = async () => (await call(api.url, user.auth, "GET", "/v1/billing/usage")).body.usage.messages_sent as number;

    const answered = await call(api.url, user.auth, "POST", path, { content: "first" });
    expect(answered.status).toBe(201);
    const before = await messages();
    expect(before.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(await used()).toBe(1);

    // Blocking: the model never answers before the kill.
    fake.chat.next({ firstTokenDelayMs: 600_000 });
    const calls = chatCalls();
    const blocking = fetch(`${api.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...user.auth }, body: JSON.stringify({ content: "cut short" }) }).catch((error: Error) => error);
    await until("the blocking send reaches the model", async () => chatCalls() > calls && JSON.stringify(fake.requests.at(-1)?.body).includes("cut short"));
    await restart();
    expect(await blocking).toBeInstanceOf(Error);
    expect(await messages(), "a blocking send cut short stores nothing").toEqual(before);
    // Counted until its lease runs out, then given back by the restarted process's worker.
    await until("the blocking send's message is given back", async () => (await used()) === 1);

    // Stream: killed after a few deltas reached the client (the input is stored while the model is
    // asked, so by then it has been written).
    fake.chat.next({ chunks: Array.from({ length: 200 }, (_, n) => `word${n} `), chunkDelayMs: 200 });
    const response = await fetch(`${api.url}${path}/stream`, { method: "POST", headers: { "content-type": "application/json", ...user.auth }, body: JSON.stringify({ content: "streamed" }) });
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
    const again = await call(api.url, user.auth, "POST", path, { content: "after" });
    expect(again.status).toBe(201);
    expect((await messages()).slice(-2).map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(await used()).toBe(2);
    // A stored reply keeps its message after its lease's time (its job was removed, or finds it).
    await sleep((LEASE_SECONDS + 2) * 1000);
    expect(await used()).toBe(2);
  });
});
