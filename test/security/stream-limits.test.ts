import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ScriptedModel } from "../replies/fakes.ts";
import { expectOk } from "../support/assertions.ts";
import { makePersona, makeRoom } from "../rooms/helpers.ts";
import { eventually, until } from "../support/wait.ts";
import { contract } from "../support/contract.ts";
import { readIdEvents, generationOf } from "../support/generations.ts";
import { jsonHeaders, startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// issue 31 L6: one account held 1,000 room-event streams. Every operation that answers
// `text/event-stream` now takes one of the user's STREAMS_PER_USER places while its stream is open;
// one more is 429 `rate_limited` with Retry-After (OpenAI's envelope under /openai/v1), before any
// work is done; a stream that closes gives its place back; other users are not affected.
const CAP = 3;

let service: TestService;
let model: ScriptedModel;
let alice: TestUser;
let bob: TestUser;
const held: { close: () => void }[] = [];

/** A stream request that stays open until `close()`; its status, and its body when refused. */
interface Opened {
  status: number;
  headers: Headers;
  response: Response;
  /** The JSON error body of a refused stream. */
  error: () => Promise<{ error: Record<string, unknown> }>;
  close: () => void;
}

// Raw on purpose: one opener for every streaming operation of the contract, named by path, held open
// by an AbortSignal and read as a raw stream.
async function open(path: string, user: TestUser, init: { method?: string; body?: unknown } = {}): Promise<Opened> {
  const controller = new AbortController();
  const response = await service.fetch(path, {
    method: init.method ?? "GET",
    headers: { ...user.auth, accept: "text/event-stream", ...(init.body === undefined ? {} : jsonHeaders) },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    signal: controller.signal,
  });
  const opened = {
    status: response.status,
    headers: response.headers,
    response,
    error: async () => JSON.parse(await response.text()),
    close: () => controller.abort(),
  };
  if (response.status === 200) held.push(opened);
  return opened;
}

const roomEvents = (user: TestUser, roomId: string) => open(`/v1/rooms/${roomId}/events`, user);

/** Everything a user needs to call each streaming operation once. */
interface Fixture {
  roomId: string;
  personaId: string;
  conversationId: string;
  userMessageId: string;
  replyId: string;
  generationId: string;
}

async function fixtureOf(user: TestUser): Promise<Fixture> {
  const persona = await makePersona(service, user, "Captain Nova");
  const room = await makeRoom(service, user);
  const conversationId = (await expectOk(service.clientFor(user).POST("/v1/conversations", { body: { persona_id: persona.id } }), 201)).id;
  const sent = await open(`/v1/conversations/${conversationId}/messages/stream`, user, { method: "POST", body: { content: "Which planet is low in the west?" } });
  expect(sent.status).toBe(200);
  const events = await readIdEvents(sent.response);
  const done = JSON.parse(events.at(-1)!.data) as { message_id: string };
  const { data } = await expectOk(service.clientFor(user).GET("/v1/conversations/{id}/messages", { params: { path: { id: conversationId } } }));
  return {
    roomId: room.id,
    personaId: persona.id,
    conversationId,
    userMessageId: data.find((message) => message.role === "user")!.id,
    replyId: done.message_id,
    generationId: generationOf(events),
  };
}

/** One request of each streaming operation of the contract, by operationId. */
function streamRequests(f: Fixture): Record<string, { path: string; method?: string; body?: unknown }> {
  return {
    rooms_events: { path: `/v1/rooms/${f.roomId}/events` },
    conversations_stream_message: { path: `/v1/conversations/${f.conversationId}/messages/stream`, method: "POST", body: { content: "One more?" } },
    conversation_generations_stream: { path: `/v1/conversations/${f.conversationId}/generations/${f.generationId}/stream` },
    conversation_tree_regenerate_stream: { path: `/v1/conversations/${f.conversationId}/messages/${f.replyId}/regenerate/stream`, method: "POST" },
    conversation_tree_edit_stream: { path: `/v1/conversations/${f.conversationId}/messages/${f.userMessageId}/edit/stream`, method: "POST", body: { content: "Which planet, then?" } },
    openai_create_chat_completion: { path: "/openai/v1/chat/completions", method: "POST", body: { model: f.personaId, stream: true, messages: [{ role: "user", content: "Hi" }] } },
    openai_responses_create: { path: "/openai/v1/responses", method: "POST", body: { model: f.personaId, stream: true, input: "Hi" } },
  };
}

/** The contract's operations that answer `text/event-stream`, with their security requirements. */
function streamingOperations(): { operationId: string; security: unknown[] }[] {
  const found = [];
  const document = contract as unknown as { paths: Record<string, Record<string, { operationId?: string; security?: unknown[]; responses?: Record<string, { content?: Record<string, unknown> }> }>>; security?: unknown[] };
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item)) {
      if (typeof operation !== "object" || !operation?.operationId) continue;
      const streams = Object.values(operation.responses ?? {}).some((response) => response?.content?.["text/event-stream"] !== undefined);
      if (streams) found.push({ operationId: operation.operationId, security: operation.security ?? document.security ?? [] });
    }
  }
  return found;
}

const messageCount = async (conversationId: string) =>
  Number((await service.services.db.knex("messages").where({ conversation_id: conversationId }).count({ n: "*" }).first())?.n ?? 0);

let a: Fixture;

beforeAll(async () => {
  model = new ScriptedModel();
  service = await startTestService({
    providers: { llm: model },
    env: { STREAMS_PER_USER: String(CAP), RATE_LIMIT_PER_MINUTE: "100000", AUTO_AVATARS: "false", DEFAULT_PLAN: "creator", STREAM_KEEPALIVE_MS: "200", SHUTDOWN_TIMEOUT_MS: "600000" },
  });
  [alice, bob] = [await registerUser(service), await registerUser(service)];
  a = await fixtureOf(alice);
}, 60_000);

afterAll(async () => {
  for (const stream of held) stream.close();
  await service?.close();
});

describe("open streams per user (issue 31 L6)", () => {
  it("every streaming operation of the contract needs a credential, so the cap is per user (no per-IP cap is needed)", () => {
    // An embed visitor's stream takes a guest token, no account credential: its places are counted
    // per visitor, and visitors per client address (test/embeds/limits.test.ts).
    const streaming = streamingOperations().filter((op) => op.operationId !== "embeds_stream");
    expect(streaming.map((op) => op.operationId).sort()).toEqual(Object.keys(streamRequests(a)).sort());
    expect(streaming.filter((op) => op.security.length === 0 || op.security.some((requirement) => Object.keys(requirement as object).length === 0))).toEqual([]);
  });

  it("a user holds at most the cap; one more is 429 rate_limited with Retry-After; closing one frees a place; another user is unaffected", async () => {
    // The fixture's exchange queued jobs that ask the model too (a title, a memory): they must not
    // take the held script below, whenever a loaded machine runs them.
    await until("the fixture's background jobs", async () =>
      Number((await service.services.db.knex("graphile_worker._private_jobs").where("run_at", "<=", new Date()).count({ n: "*" }).first())?.n) === 0);
    // A reply stream that stays open (the model holds it) counts as a stream too.
    model.next({ chunks: ["That's "], holdUntilAborted: true });
    const chat = await open(`/v1/conversations/${a.conversationId}/messages/stream`, alice, { method: "POST", body: { content: "Talk slowly." } });
    expect(chat.status).toBe(200);
    const streams = [chat];
    for (let i = 1; i < CAP; i++) streams.push(await roomEvents(alice, a.roomId));
    expect(streams.map((stream) => stream.status)).toEqual(Array(CAP).fill(200));

    const refused = await roomEvents(alice, a.roomId);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    const body = await refused.error();
    expect(body.error).toMatchObject({ code: "rate_limited", message: expect.stringContaining(String(CAP)), details: { retry_after: Number(refused.headers.get("retry-after")) } });

    // Another user opens as many as the cap while alice is full.
    const room = await makeRoom(service, bob);
    const bobs = [];
    for (let i = 0; i < CAP; i++) bobs.push(await roomEvents(bob, room.id));
    expect(bobs.map((stream) => stream.status)).toEqual(Array(CAP).fill(200));
    for (const stream of bobs) stream.close();

    // A room stream closed by its client gives its place back.
    streams[1]!.close();
    const reopened = await eventually(async () => {
      const attempt = await roomEvents(alice, a.roomId);
      return attempt.status === 200 ? attempt : undefined;
    });
    expect(reopened.status).toBe(200);
    expect((await roomEvents(alice, a.roomId)).status).toBe(429);

    // A reply stream that ends gives its place back: stop the held generation.
    const [start] = await readIdEvents(chat.response, (events) => events.length > 0);
    const generationId = (JSON.parse(start!.data) as { generation_id: string }).generation_id;
    const stopped = await service.fetch(`/v1/conversations/${a.conversationId}/generations/${generationId}/stop`, { method: "POST", headers: alice.auth });
    expect(stopped.status).toBe(200);
    const again = await eventually(async () => {
      const attempt = await roomEvents(alice, a.roomId);
      return attempt.status === 200 ? attempt : undefined;
    });
    expect(again.status).toBe(200);
    for (const stream of [...streams, reopened, again]) stream.close();
  });

  it("every streaming operation is refused at the cap, in its own envelope, before any work is done", async () => {
    const full = [];
    for (let i = 0; i < CAP; i++) full.push(await eventually(async () => {
      const attempt = await roomEvents(alice, a.roomId);
      return attempt.status === 200 ? attempt : undefined;
    }));
    const messagesBefore = await messageCount(a.conversationId);
    const modelCalls = model.requests.length;
    const wrong: string[] = [];
    for (const [operationId, request] of Object.entries(streamRequests(a))) {
      const answer = await open(request.path, alice, request);
      const body = answer.status === 200 ? undefined : await answer.error();
      if (answer.status !== 429 || !(Number(answer.headers.get("retry-after")) >= 1)) wrong.push(`${operationId} -> ${answer.status} ${JSON.stringify(body)}`);
      else if (operationId.startsWith("openai_")) {
        if ((body?.error as { code?: string; type?: string }).code !== "rate_limit_exceeded" || (body?.error as { type?: string }).type !== "rate_limit_error") wrong.push(`${operationId}: ${JSON.stringify(body)}`);
      } else if ((body?.error as { code?: string }).code !== "rate_limited") wrong.push(`${operationId}: ${JSON.stringify(body)}`);
      answer.close();
    }
    expect(wrong).toEqual([]);
    // Nothing was stored or asked of the model for the refused streams.
    expect(await messageCount(a.conversationId)).toBe(messagesBefore);
    expect(model.requests.length).toBe(modelCalls);
    // A blocking completion is no stream: it is not counted.
    const blocking = await service.clientFor(alice).POST("/openai/v1/chat/completions", { body: { model: a.personaId, messages: [{ role: "user", content: "Hi" }] } });
    expect(blocking.response.status, JSON.stringify(blocking.error ?? blocking.data)).toBe(200);
    for (const stream of full) stream.close();
  });
});
