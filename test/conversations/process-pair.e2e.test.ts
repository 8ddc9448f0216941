import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { freshStore, register, startPersona, type Proc, type Store } from "../resilience/support.ts";
import { createConversation, createPersona, sendStream } from "../support/chat.ts";
import { contentOf, generationOf, readIdEvents, stopMidReply } from "../support/generations.ts";
import { databaseKind, type TestService } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";
import { until } from "../support/wait.ts";

// Issue 21 asks for the resume and stop tests on two API processes. test/conversations/resume and
// stop run two services inside the test process; here they are two spawned `persona serve`
// processes on one PostgreSQL database, so nothing but the database and its notifications joins
// them. The embedded default keeps its data dir in one process, so its two API processes are
// those of `persona serve --processes 2`: process-cluster.test.ts.
const onPostgres = databaseKind === "postgres";

let fake: FakeOpenAI;
let store: Store;
let a: Proc;
let b: Proc;
let alice: TestUser;
let personaId: string;
let env: Record<string, string>;

/** A spawned process as the test helpers' service shape (only `fetch` is used). */
const asService = (proc: Proc) => ({ url: proc.url, fetch: (path: string, init?: RequestInit) => fetch(`${proc.url}${path}`, init) }) as unknown as TestService;
const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i} `);

describe.runIf(onPostgres)("two spawned API processes on one PostgreSQL database", () => {
  beforeAll(async () => {
    fake = await startFakeOpenAI();
    store = await freshStore();
    env = { ...store.env, OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test-secret", LLM_MAX_RETRIES: "0", LLM_TIMEOUT_MS: "20000", STREAM_KEEPALIVE_MS: "200", GENERATION_LEASE_MS: "2000" };
    a = await startPersona(["serve"], env);
    b = await startPersona(["serve", "--no-worker"], env);
    alice = (await register(a.url)) as unknown as TestUser;
    personaId = (await createPersona(asService(a), alice)).id;
  }, 180_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await store?.drop();
    await fake?.close();
  });

  it("resume on the other process replays the missed events and follows live to done", async () => {
    const conversation = await createConversation(asService(a), alice, personaId, "pair resume");
    fake.chat.next({ chunks: words(12), chunkDelayMs: 150 });
    const first = await readIdEvents(await sendStream(asService(a), alice, conversation.id, "talk"), (events) => events.filter((e) => e.event === "delta").length >= 3);
    const generationId = generationOf(first);
    const response = await fetch(`${b.url}/v1/conversations/${conversation.id}/generations/${generationId}/stream`, { headers: { ...alice.auth, "last-event-id": first.at(-1)!.id! } });
    expect(response.status).toBe(200);
    const rest = await readIdEvents(response);
    const ids = [...first, ...rest].map((e) => Number(e.id));
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
    expect(rest.at(-1)!.event).toBe("done");
    expect(contentOf(first) + contentOf(rest)).toBe(words(12).join(""));
  });

  it("stop on the other process aborts the upstream call and stores the partial reply, stopped", async () => {
    const conversation = await createConversation(asService(a), alice, personaId, "pair stop");
    fake.chat.next({ chunks: words(50), chunkDelayMs: 200 });
    const { generation, events: all } = await stopMidReply(fake, await sendStream(asService(a), alice, conversation.id, "talk forever"), (generationId) =>
      fetch(`${b.url}/v1/conversations/${conversation.id}/generations/${generationId}/stop`, { method: "POST", headers: alice.auth }),
    );
    expect(JSON.parse(all.at(-1)!.data)).toMatchObject({ message_id: generation.reply_message_id, stopped: true });
    const read = await (await fetch(`${b.url}/v1/conversations/${conversation.id}`, { headers: alice.auth })).json();
    expect(read.messages.at(-1)).toMatchObject({ id: generation.reply_message_id, stopped: true, content: contentOf(all) });
    expect(read.messages.at(-1).content).not.toContain("w49");
  });

  it("a generation whose process died ends failed for its followers once its lease runs out", async () => {
    const doomed = await startPersona(["serve", "--no-worker"], env);
    const conversation = await createConversation(asService(doomed), alice, personaId, "pair lost");
    fake.chat.next({ chunks: words(100), chunkDelayMs: 200 });
    const first = await readIdEvents(await sendStream(asService(doomed), alice, conversation.id, "talk"), (events) => events.filter((e) => e.event === "delta").length >= 2);
    const generationId = generationOf(first);
    await doomed.kill9();
    // The resumer on the surviving process waits while the lease may still be renewed, then hears the end.
    const rest = await readIdEvents(await fetch(`${b.url}/v1/conversations/${conversation.id}/generations/${generationId}/stream`, { headers: { ...alice.auth, "last-event-id": first.at(-1)!.id! } }));
    const end = rest.at(-1)!;
    expect(end.event).toBe("error");
    expect(JSON.parse(end.data)).toMatchObject({ code: "generation_lost" });
    const generation = await (await fetch(`${b.url}/v1/conversations/${conversation.id}/generations/${generationId}`, { headers: alice.auth })).json();
    expect(generation).toMatchObject({ status: "failed", reply_message_id: null, finished_at: expect.any(String) });
    // Stopping it now is the harmless answer of an ended generation.
    const stopped = await fetch(`${b.url}/v1/conversations/${conversation.id}/generations/${generationId}/stop`, { method: "POST", headers: alice.auth });
    expect(await stopped.json()).toMatchObject({ status: "failed" });
  });
});

// On both kinds: the process that generated is killed and a process started afterwards on the same
// data (the same data dir, on the embedded default) finds the generation lost once its lease ran out.
describe(`a generation whose process was killed, after a restart (${databaseKind})`, () => {
  let lostStore: Store;
  let revived: Proc | undefined;
  afterAll(async () => {
    await revived?.stop();
    await lostStore?.drop();
  });

  it("is recorded failed by the next reader, and a resume ends with generation_lost", async () => {
    const llm = await startFakeOpenAI();
    try {
      lostStore = await freshStore();
      const env = { ...lostStore.env, OPENAI_BASE_URL: llm.baseUrl, OPENAI_API_KEY: "sk-test-secret", LLM_MAX_RETRIES: "0", STREAM_KEEPALIVE_MS: "200", GENERATION_LEASE_MS: "1000" };
      const doomed = await startPersona(["serve", "--no-worker"], env);
      const user = (await register(doomed.url)) as unknown as TestUser;
      const persona = await createPersona(asService(doomed), user);
      const conversation = await createConversation(asService(doomed), user, persona.id, "lost");
      llm.chat.next({ chunks: words(100), chunkDelayMs: 200 });
      const first = await readIdEvents(await sendStream(asService(doomed), user, conversation.id, "talk"), (events) => events.filter((e) => e.event === "delta").length >= 2);
      await doomed.kill9();
      revived = await startPersona(["serve", "--no-worker"], env);
      const path = `/v1/conversations/${conversation.id}/generations/${generationOf(first)}`;
      // A read first records it lost before the resume (the harder order: the resumer saw events never
      // stored): the first read after its lease ran out, which a fast restart may precede.
      const lost = await until("a read records the generation lost", async () => {
        const row = (await (await fetch(`${revived!.url}${path}`, { headers: user.auth })).json()) as { status: string };
        return row.status === "failed" ? row : undefined;
      });
      expect(lost).toMatchObject({ status: "failed", reply_message_id: null });
      const resumed = await fetch(`${revived.url}${path}/stream`, { headers: { ...user.auth, "last-event-id": first.at(-1)!.id! } });
      expect(resumed.status).toBe(200);
      const rest = await readIdEvents(resumed);
      expect(rest.at(-1)).toMatchObject({ event: "error" });
      expect(JSON.parse(rest.at(-1)!.data)).toMatchObject({ code: "generation_lost" });
    } finally {
      await llm.close();
    }
  });
});
