import { Agent, fetch as fetchOn } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { freshStore, register, startPersona, until, type Proc, type Store } from "../resilience/support.ts";
import { createConversation, createPersona } from "../support/chat.ts";
import { contentOf, generationOf, readIdEvents, stopMidReply } from "../support/generations.ts";
import { databaseKind, type TestService } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";

// Issue 21's resume and stop tests on two API processes, on the embedded default: its data dir
// belongs to one process, so a second API process exists only as `persona serve --processes 2`
// (node:cluster; the primary serves PGlite, notifications cross over IPC). Both share one port and
// the primary hands out connections, so the test pins each side to a keep-alive connection of its
// own, learns from the log (every line names its pid) which process holds it, and takes one on
// each process. process-pair.e2e.test.ts is PostgreSQL's counterpart, with two separate servers.
const onEmbedded = databaseKind === "embedded";

let fake: FakeOpenAI;
let store: Store;
let server: Proc;
let alice: TestUser;
let personaId: string;
let counter = 0;

/** One keep-alive connection: the same process answers every request sent over it. */
interface Pinned {
  pid: number;
  /** Answers carry the request id they were sent with, to find their log line. */
  fetch: (path: string, init?: { method?: string; headers?: Record<string, string>; body?: string }) => Promise<Response & { requestId: string }>;
  close: () => Promise<void>;
}

/** The pid on the log line of the request with this id (`LOG_LEVEL=debug` logs every request). */
const pidOf = (requestId: string) =>
  until(`the log line of request ${requestId}`, async () => {
    for (const line of server.output().split("\n")) {
      if (!line.includes(requestId)) continue;
      const entry = JSON.parse(line) as { reqId?: string; pid?: number };
      if (entry.reqId === requestId && entry.pid) return entry.pid;
    }
    return undefined;
  }, 10_000);

async function pin(): Promise<Pinned> {
  const dispatcher = new Agent({ connections: 1, keepAliveTimeout: 30_000 });
  const send = async (path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) => {
    const requestId = `cluster-${process.pid}-${++counter}`;
    const response = await fetchOn(`${server.url}${path}`, { ...init, headers: { ...init.headers, "x-request-id": requestId }, dispatcher });
    return Object.assign(response as unknown as Response, { requestId });
  };
  const probe = await send("/v1/auth/me", { headers: alice.auth });
  expect(probe.status).toBe(200);
  await probe.text();
  return { pid: await pidOf(probe.requestId), fetch: send, close: () => dispatcher.close() };
}

/**
 * A connection on another process than `pid`: the primary hands new connections to its processes
 * in turn, once the second has started (it forks after the first is ready). Taken right before it
 * is used: the server closes a keep-alive connection idle for 5 s, and the one that replaces it may
 * land on either process, so a connection pinned early is not trusted to be where it was.
 */
function pinElsewhere(pid: number): Promise<Pinned> {
  return until("a connection on the other API process", async () => {
    const pinned = await pin();
    if (pinned.pid !== pid) return pinned;
    await pinned.close();
    return undefined;
  }, 60_000);
}

const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i} `);
const asService = (url: string) => ({ url, fetch: (path: string, init?: RequestInit) => fetch(`${url}${path}`, init) }) as unknown as TestService;
const streamBody = (content: string) => ({ method: "POST", headers: { ...alice.auth, "content-type": "application/json" }, body: JSON.stringify({ content }) });

describe.runIf(onEmbedded)("two API processes of `persona serve --processes 2` on the embedded default", () => {
  let generator: Pinned;
  let other: Pinned;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    store = await freshStore();
    const env = { ...store.env, OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test-secret", LLM_MAX_RETRIES: "0", LLM_TIMEOUT_MS: "20000", STREAM_KEEPALIVE_MS: "200", LOG_LEVEL: "debug" };
    server = await startPersona(["serve", "--processes", "2"], env);
    alice = (await register(server.url)) as unknown as TestUser;
    personaId = (await createPersona(asService(server.url), alice)).id;
  }, 180_000);

  afterAll(async () => {
    await Promise.all([generator?.close(), other?.close()]);
    await server?.stop();
    await store?.drop();
    await fake?.close();
  });

  it("a resume on the other process replays what was missed and follows live to done", async () => {
    const conversation = await createConversation(asService(server.url), alice, personaId, "cluster resume");
    generator = await pin();
    fake.chat.next({ chunks: words(60), chunkDelayMs: 150 });
    const sent = await generator.fetch(`/v1/conversations/${conversation.id}/messages/stream`, streamBody("talk"));
    const first = await readIdEvents(sent, (events) => events.filter((e) => e.event === "delta").length >= 3);
    // The send went out right after its connection's probe, so it runs where the probe answered;
    // the resume goes to a connection taken now on the other process.
    other = await pinElsewhere(generator.pid);
    const response = await other.fetch(`/v1/conversations/${conversation.id}/generations/${generationOf(first)}/stream`, { headers: { ...alice.auth, "last-event-id": first.at(-1)!.id! } });
    expect(response.status).toBe(200);
    const rest = await readIdEvents(response);
    const ids = [...first, ...rest].map((e) => Number(e.id));
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
    expect(rest.filter((e) => e.event === "delta").length).toBeGreaterThan(3);
    expect(rest.at(-1)!.event).toBe("done");
    expect(contentOf(first) + contentOf(rest)).toBe(words(60).join(""));
    // The log says who answered: the send on one process, the resume on the other.
    expect(await pidOf(sent.requestId)).toBe(generator.pid);
    expect(await pidOf(response.requestId)).not.toBe(generator.pid);
  });

  it("a stop on the other process aborts the upstream call and stores the partial reply, stopped", async () => {
    await Promise.all([generator?.close(), other?.close()]);
    const conversation = await createConversation(asService(server.url), alice, personaId, "cluster stop");
    generator = await pin();
    // Long enough that finding a connection on the other process never outlasts the reply.
    fake.chat.next({ chunks: words(200), chunkDelayMs: 200 });
    const sent = await generator.fetch(`/v1/conversations/${conversation.id}/messages/stream`, streamBody("talk forever"));
    let stopRequestId = "";
    const { generation, events: all } = await stopMidReply(fake, sent, async (generationId) => {
      other = await pinElsewhere(generator.pid);
      const answer = await other.fetch(`/v1/conversations/${conversation.id}/generations/${generationId}/stop`, { method: "POST", headers: alice.auth });
      stopRequestId = answer.requestId;
      return answer;
    });
    expect(JSON.parse(all.at(-1)!.data)).toMatchObject({ message_id: generation.reply_message_id, stopped: true });
    const read = await (await other.fetch(`/v1/conversations/${conversation.id}`, { headers: alice.auth })).json() as { messages: { id: string; stopped?: boolean; content: string }[] };
    expect(read.messages.at(-1)).toMatchObject({ id: generation.reply_message_id, stopped: true, content: contentOf(all) });
    expect(read.messages.at(-1)!.content).not.toContain("w199");
    expect(await pidOf(sent.requestId)).toBe(generator.pid);
    expect(await pidOf(stopRequestId)).not.toBe(generator.pid);
  });
});
