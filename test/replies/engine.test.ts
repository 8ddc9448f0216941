import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { conversationReply } from "../../server/areas/conversations/chat/replying.ts";
import { ApiError } from "../../server/toolkit/http/errors.ts";
import { beginReply } from "../../server/areas/replies/engine.ts";
import type { InputRecord, ReplyEvent, ReplyRequest } from "../../server/areas/replies/types.ts";
import { createConversation, createPersona } from "../support/chat.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { fixedContext, recordingSink, ScriptedModel } from "./fakes.ts";

// The reply engine called directly, with a model provider in memory: no HTTP, a recording sink and a
// fixed context (the database holds only the quota), then once through a conversation's source and
// sink. What it yields and in which order, what it stores, and that the quota is given back whenever
// no reply is stored.
let service: TestService;
let model: ScriptedModel;
let user: TestUser;

const persona = { id: "0193a6f1-0000-7000-8000-000000000001", name: "Captain Nova", model: "gpt-4o-mini", instructions: "You are Captain Nova." };
const chunk = (i: number, content: string) => ({ chunk_id: `k${i}`, document_id: "d1", filename: "stars.md", chunk_index: i, similarity: [0.8, 0.6][i] ?? 0.5, content });

beforeAll(async () => {
  model = new ScriptedModel();
  service = await startTestService({ providers: { llm: model } });
  user = await registerUser(service);
});

afterAll(async () => {
  await service?.close();
});

const used = async (userId = user.id) =>
  Number((await service.services.db.knex("usage_counters").where({ user_id: userId }).sum({ n: "messages_sent" }).first())?.n ?? 0);

/** A reply request with a recording sink; `log` gets the sink's calls and the events, in order. */
function request(overrides: Partial<ReplyRequest> = {}) {
  const log: string[] = [];
  const recorded = recordingSink(log);
  const { context } = fixedContext();
  const base: ReplyRequest = { userId: user.id, persona, context, input: "Which planet is that?", sink: recorded.sink, mode: "stream" };
  return { log, ...recorded, request: { ...base, ...overrides } };
}

async function collect(events: AsyncIterable<ReplyEvent>, log: string[] = [], onEvent?: (event: ReplyEvent) => void): Promise<ReplyEvent[]> {
  const seen: ReplyEvent[] = [];
  for await (const event of events) {
    log.push(event.type);
    seen.push(event);
    onEvent?.(event);
  }
  return seen;
}

describe("a streamed reply", () => {
  it("yields the deltas in order, then done once the reply is stored, with ids and usage", async () => {
    const { log, stored, failures, request: req } = request();
    model.next({ chunks: ["That is", " Venus", ", cadet."] });
    const before = await used();
    const events = await collect(await beginReply(service.services, req), log);
    expect(events.map((e) => e.type)).toEqual(["delta", "delta", "delta", "done"]);
    expect(events.slice(0, 3).map((e) => (e.type === "delta" ? e.content : ""))).toEqual(["That is", " Venus", ", cadet."]);
    // The input is stored as the model is asked, the reply before done.
    expect(log).toEqual(["store user", "delta", "delta", "delta", "store assistant", "done"]);
    const done = events[3] as Extract<ReplyEvent, { type: "done" }>;
    expect(done.input).toMatchObject({ role: "user", content: "Which planet is that?" });
    expect(done.reply).toMatchObject({ role: "assistant", content: "That is Venus, cadet.", model: "gpt-4o-mini", usage: { inputTokens: 21, outputTokens: 4 }, citations: [] });
    expect(done.reply.id).not.toBe(done.input.id);
    expect(stored).toEqual([[done.input], [done.reply]]);
    expect(failures).toEqual([]);
    expect(await used()).toBe(before + 1);
  });

  it("sends the persona, the history oldest first (a greeting the oldest of it, once) and the input to the model", async () => {
    const { context } = fixedContext([
      { id: "m2", role: "assistant", content: "Mars, cadet." },
      { id: "m1", role: "user", content: "And the red one?" },
      { id: "m0", role: "assistant", content: "Welcome aboard!" },
    ]);
    const { request: req } = request({ context });
    await collect(await beginReply(service.services, req));
    expect(model.requests.at(-1)).toMatchObject({
      model: "gpt-4o-mini",
      purpose: "reply",
      messages: [
        { role: "system", content: "You are Captain Nova." },
        { role: "assistant", content: "Welcome aboard!" },
        { role: "user", content: "And the red one?" },
        { role: "assistant", content: "Mars, cadet." },
        { role: "user", content: "Which planet is that?" },
      ],
    });
  });

  it("passes the knowledge that fits into the context and cites it on the reply", async () => {
    const { context } = fixedContext([], [chunk(0, "Venus is the brightest planet."), chunk(1, "Mars is red.")]);
    const { request: req } = request({ context });
    const events = await collect(await beginReply(service.services, req));
    const done = events.at(-1) as Extract<ReplyEvent, { type: "done" }>;
    expect(done.reply.citations).toEqual([
      { chunk_id: "k0", document_id: "d1", filename: "stars.md", chunk_index: 0, similarity: 0.8 },
      { chunk_id: "k1", document_id: "d1", filename: "stars.md", chunk_index: 1, similarity: 0.6 },
    ]);
    expect(model.requests.at(-1)!.messages[1]!.content).toContain("[source: stars.md#0]\nVenus is the brightest planet.");
  });

  it("answers a stored input without storing it again or sending it twice", async () => {
    const input: InputRecord = { id: "0193a6f1-0000-7000-8000-0000000000aa", role: "user", content: "Try again", tokens: 2, createdAt: new Date() };
    const { context } = fixedContext([{ id: input.id, role: "user", content: "Try again" }]);
    const { stored, request: req } = request({ context, input });
    const events = await collect(await beginReply(service.services, req));
    const done = events.at(-1) as Extract<ReplyEvent, { type: "done" }>;
    expect(done.input).toBe(input);
    expect(stored).toEqual([[done.reply]]);
    expect(model.requests.at(-1)!.messages.filter((m) => m.content === "Try again")).toHaveLength(1);
  });

  it("ends with an error event on a provider failure mid-stream, keeps the input, stores no reply and gives the quota back", async () => {
    const { log, stored, failures, request: req } = request();
    model.next({ chunks: ["one", " two", " three"], failAfter: 2 });
    const before = await used();
    const events = await collect(await beginReply(service.services, req), log);
    expect(events.map((e) => e.type)).toEqual(["delta", "delta", "error"]);
    const error = events[2] as Extract<ReplyEvent, { type: "error" }>;
    expect(error.error).toMatchObject({ status: 502, code: "upstream_error" });
    // The provider's error as the provider words it for callers (its upstream's text never gets this far).
    expect(error.error.message).toBe("The model provider's stream broke");
    expect(stored.map((batch) => batch.map((m) => m.role))).toEqual([["user"]]);
    expect(error.inputId).toBe(stored[0]![0]!.id);
    expect(failures).toEqual([{ error: error.error, inputId: error.inputId }]);
    // The sink hears of the failure before the caller does.
    expect(log.slice(-2)).toEqual(["failed", "error"]);
    expect(await used()).toBe(before);
  });

  it("on abort cancels the model call, stores no reply, gives the quota back and reports the abort's reason", async () => {
    const controller = new AbortController();
    const { stored, failures, request: req } = request({ signal: controller.signal });
    model.next({ chunks: ["Let me think"], holdUntilAborted: true });
    const before = await used();
    const stop = new ApiError(500, "internal_error", "Stopped by the user");
    const events = await collect(await beginReply(service.services, req), [], (event) => {
      if (event.type === "delta") controller.abort(stop);
    });
    expect(events.map((e) => e.type)).toEqual(["delta", "error"]);
    expect(model.sawAbort).toBe(true);
    expect(model.requests.at(-1)!.signal).toBe(controller.signal);
    expect((events[1] as Extract<ReplyEvent, { type: "error" }>).error).toBe(stop);
    expect(stored.map((batch) => batch.map((m) => m.role))).toEqual([["user"]]);
    expect(failures).toEqual([{ error: stop, inputId: stored[0]![0]!.id }]);
    expect(await used()).toBe(before);
  });

  it("gives the quota back when the caller stops reading before the end", async () => {
    const { failures, stored, request: req } = request();
    model.next({ chunks: ["a", "b", "c"] });
    const before = await used();
    for await (const event of await beginReply(service.services, req)) {
      expect(event.type).toBe("delta");
      break;
    }
    expect(await used()).toBe(before);
    expect(stored.map((batch) => batch.map((m) => m.role))).toEqual([["user"]]);
    expect(failures).toHaveLength(1);
    expect(failures[0]!.error.code).toBe("internal_error");
  });

  it("reports a reply that could not be stored as an internal error and gives the quota back", async () => {
    const log: string[] = [];
    const { sink, failures } = recordingSink(log, { failStore: (messages) => messages.some((m) => m.role === "assistant") });
    const { request: req } = request({ sink });
    const before = await used();
    const events = await collect(await beginReply(service.services, req), log);
    expect(events.at(-1)).toMatchObject({ type: "error", error: { status: 500, code: "internal_error" } });
    expect(failures).toHaveLength(1);
    expect(await used()).toBe(before);
  });
});

describe("a whole reply", () => {
  it("yields the reply as one delta, then done, storing input and reply together", async () => {
    const { log, stored, request: req } = request({ mode: "whole" });
    model.next({ chunks: ["That is ", "Venus."] });
    const events = await collect(await beginReply(service.services, req), log);
    expect(events.map((e) => e.type)).toEqual(["delta", "done"]);
    const done = events[1] as Extract<ReplyEvent, { type: "done" }>;
    expect(done.reply).toMatchObject({ content: "That is Venus.", model: "gpt-4o-mini-2025", usage: { inputTokens: 11, outputTokens: 3 } });
    expect(log).toEqual(["delta", "store user+assistant", "done"]);
    expect(stored).toEqual([[done.input, done.reply]]);
    expect(model.requests.at(-1)!.signal).toBeUndefined();
  });

  it("stores nothing when the provider fails, and gives the quota back", async () => {
    const { stored, failures, request: req } = request({ mode: "whole" });
    model.next({ failAfter: 0 });
    const before = await used();
    const events = await collect(await beginReply(service.services, req));
    expect(events).toEqual([{ type: "error", error: expect.objectContaining({ status: 502, code: "upstream_error" }), inputId: null }]);
    expect(stored).toEqual([]);
    expect(failures).toEqual([{ error: expect.any(ApiError), inputId: null }]);
    expect(await used()).toBe(before);
  });
});

describe("before a reply runs", () => {
  it("refuses with 402 when the month's messages are used up, stopping the context load and never asking the model", async () => {
    const spent = await registerUser(service);
    const period = new Date().toISOString().slice(0, 8) + "01";
    await service.services.db.knex("usage_counters").insert({ user_id: spent.id, period_start: period, messages_sent: 200 });
    const { context, signals } = fixedContext([], [], { untilAborted: true });
    const { request: req } = request({ userId: spent.id, context });
    const calls = model.requests.length;
    const refused = await beginReply(service.services, req).catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 402, code: "plan_limit_exceeded" });
    expect(signals[0]!.aborted).toBe(true);
    expect(model.requests).toHaveLength(calls);
    expect(await used(spent.id)).toBe(200);
  });

  it("throws the context source's error and keeps no quota", async () => {
    const gone = new ApiError(404, "not_found", "Conversation not found");
    const { context } = fixedContext([], [], { fail: gone });
    const { stored, request: req } = request({ context });
    const before = await used();
    await expect(beginReply(service.services, req)).rejects.toBe(gone);
    expect(stored).toEqual([]);
    expect(await used()).toBe(before);
  });

  it("gives the quota back when the caller cancels instead of running it", async () => {
    const { stored, request: req } = request();
    const before = await used();
    const reply = await beginReply(service.services, req);
    expect(await used()).toBe(before + 1);
    await reply.cancel();
    expect(await used()).toBe(before);
    expect(stored).toEqual([]);
  });
});

describe("through a conversation's context source and sink", () => {
  it("reads the conversation's history and stores rows, counters and events", async () => {
    const owner = await registerUser(service);
    const created = await createPersona(service, owner, { instructions: "You are Captain Nova." });
    const conversation = await createConversation(service, owner, created.id, "Rows");
    const knex = service.services.db.knex;
    const row = await knex("conversations").where({ id: conversation.id }).first();
    const personaRow = await knex("personas").where({ id: created.id }).first();
    model.next({ chunks: ["Venus", "."] });
    const events = await collect(
      await beginReply(service.services, { userId: owner.id, persona: personaRow, ...conversationReply(service.services, row, created.id), input: "Which planet?", mode: "stream" }),
    );
    const done = events.at(-1) as Extract<ReplyEvent, { type: "done" }>;
    // After the conversation's greeting (depth 0, stored when it was created: the input's parent).
    const stored = await knex("messages").where({ conversation_id: conversation.id }).where("depth", ">", 0).orderBy([{ column: "depth" }, { column: "created_at" }, { column: "id" }]);
    expect(stored.map((m) => [m.id, m.role, m.content])).toEqual([[done.input.id, "user", "Which planet?"], [done.reply.id, "assistant", "Venus."]]);
    expect(stored[0]!.parent_id).toBe(row.active_message_id);
    expect(stored[1]).toMatchObject({ persona_id: created.id, user_id: owner.id, model: personaRow.model, input_tokens: 21, output_tokens: 4, citations: [] });
    expect((await knex("conversations").where({ id: conversation.id }).first()).message_count).toBe(2);
    expect((await knex("personas").where({ id: created.id }).first()).message_count).toBe(2);
    const outbox = await knex("event_outbox").where({ user_id: owner.id, type: "message.created" });
    expect(outbox.map((e) => e.data.message_id).sort()).toEqual([done.input.id, done.reply.id].sort());

    // The next reply sees the first exchange as history.
    model.next({ chunks: ["Still Venus."] });
    await collect(
      await beginReply(service.services, { userId: owner.id, persona: personaRow, ...conversationReply(service.services, row, created.id), input: "Sure?", mode: "whole" }),
    );
    expect(model.requests.at(-1)!.messages.map((m) => m.content).slice(-3)).toEqual(["Which planet?", "Venus.", "Sure?"]);
  });
});
