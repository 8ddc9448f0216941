import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countChatTokens } from "../../server/toolkit/providers/llm/tokens.ts";
import { addMember, makeRoom } from "../rooms/helpers.ts";
import { expectApiError, expectOk } from "../support/assertions.ts";
import { sendStream } from "../support/chat.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { ScriptedModel } from "./fakes.ts";

// Issue 34 item 6: a message that cannot fit the context budget beside the instructions is refused
// with a 400 naming the limit in tokens, before any quota is reserved or anything is stored, on
// every path that asks the model: blocking and streamed sends, edits, regenerations, rooms, the
// studio's test chat and the OpenAI-compatible door (in OpenAI's shape).
// CHAT_CONTEXT_TOKENS 2048 less CHAT_MAX_OUTPUT_TOKENS 512 is a budget of 1536; half is the
// instructions', 8 tokens the two turns': a message may have 760 tokens.
const SETTINGS = { CHAT_CONTEXT_TOKENS: "2048", CHAT_MAX_OUTPUT_TOKENS: "512", AUTO_AVATARS: "false", RATE_LIMIT_PER_MINUTE: "100000" };
const LIMIT = 760;
const FITS = "word ".repeat(LIMIT).trimEnd();
const OVER = `${FITS} word`;

let model: ScriptedModel;
let service: TestService;
let alice: TestUser;
let bob: TestUser;
let personaId: string;

beforeAll(async () => {
  model = new ScriptedModel();
  service = await startTestService({ providers: { llm: model }, env: SETTINGS });
  [alice, bob] = await Promise.all([registerUser(service), registerUser(service)]);
  await service.services.db.knex("users").whereIn("id", [alice.id, bob.id]).update({ plan: "creator" });
  // Instructions far longer than their half of the budget: they are cut to it.
  const instructions = `You are Nova. ${"Stay in character and remember the ship's long history. ".repeat(500)}`.slice(0, 32_000);
  personaId = (await expectOk(service.clientFor(alice).POST("/v1/personas", { body: { name: "Nova", instructions, greeting_message: "Hello.", is_public: true } }), 201)).id;
});

afterAll(() => service?.close());

const knex = () => service.services.db.knex;
const used = async (user: TestUser) => Number((await knex()("usage_counters").where({ user_id: user.id }).sum({ n: "messages_sent" }).first())?.n ?? 0);
const stored = async (conversationId: string) => knex()("messages").where({ conversation_id: conversationId }).orderBy("created_at").select("id", "role", "content");
const newConversation = async (user = alice) => (await expectOk(service.clientFor(user).POST("/v1/conversations", { body: { persona_id: personaId } }), 201)).id;
const send = (user: TestUser, id: string, content: string) => service.clientFor(user).POST("/v1/conversations/{id}/messages", { params: { path: { id } }, body: { content } });

/** The refusal: 400 `invalid_request` naming the field, the message's tokens and the limit. */
async function expectRefused(call: Promise<Parameters<typeof expectApiError>[0] extends Promise<infer A> ? A : never>, path: string | null) {
  const body = await expectApiError(call, 400, "invalid_request");
  expect(body.error.message).toContain(`is ${LIMIT + 1} tokens, over the limit of ${LIMIT} tokens a message may have on this server`);
  expect(body.error.message).toContain("a context of 2,048 tokens, less 512 for the reply and half of the rest for the persona's instructions");
  if (path) expect(body.error.details?.errors).toEqual([{ path, message: `is ${LIMIT + 1} tokens, over the limit of ${LIMIT} tokens a message may have` }]);
  return body;
}

/** Nothing happened: no message stored, no quota taken, no model asked. */
async function expectNothing(user: TestUser, conversationId: string | null, before: { used: number; messages: number; asked: number }) {
  expect(await used(user)).toBe(before.used);
  if (conversationId) expect((await stored(conversationId)).length).toBe(before.messages);
  expect(model.requests.filter((r) => r.purpose === "reply").length).toBe(before.asked);
}

const snapshot = async (user: TestUser, conversationId: string | null) => ({
  used: await used(user),
  messages: conversationId ? (await stored(conversationId)).length : 0,
  asked: model.requests.filter((r) => r.purpose === "reply").length,
});

describe("a conversation", () => {
  it("answers a message of exactly the limit, within the budget however long the instructions", async () => {
    const id = await newConversation();
    const before = await used(alice);
    await expectOk(send(alice, id, FITS), 201);
    expect(await used(alice)).toBe(before + 1);
    const asked = model.requests.filter((r) => r.purpose === "reply").at(-1)!;
    expect(asked.messages.at(-1)).toEqual({ role: "user", content: FITS });
    // Never over the budget: the instructions were cut to their half, the message fits the rest.
    expect(countChatTokens(asked.messages)).toBeLessThanOrEqual(2048 - 512 + 8);
  });

  it("refuses one token more on a blocking send, before any quota is reserved or anything stored", async () => {
    const id = await newConversation();
    const before = await snapshot(alice, id);
    await expectRefused(send(alice, id, OVER), "/body/content");
    await expectNothing(alice, id, before);
    const conversation = await expectOk(service.clientFor(alice).GET("/v1/conversations/{id}", { params: { path: { id } } }));
    expect(conversation.message_count).toBe(0);
  });

  it("refuses it on a streamed send with a JSON 400, no stream", async () => {
    const id = await newConversation();
    const before = await snapshot(alice, id);
    const response = await sendStream(service, alice, id, OVER, { headers: { "idempotency-key": "over-the-limit-1" } });
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const body = await response.json();
    expect(body.error.code).toBe("invalid_request");
    expect(body.error.details.errors[0].path).toBe("/body/content");
    await expectNothing(alice, id, before);
  });

  it("refuses an edit to it, blocking and streamed", async () => {
    const id = await newConversation();
    const sent = await expectOk(send(alice, id, "Hello there"), 201);
    const before = await snapshot(alice, id);
    const params = { path: { id, message_id: sent.user_message.id } };
    await expectRefused(service.clientFor(alice).POST("/v1/conversations/{id}/messages/{message_id}/edit", { params, body: { content: OVER } }), "/body/content");
    const streamed = await service.clientFor(alice).POST("/v1/conversations/{id}/messages/{message_id}/edit/stream", { params, body: { content: OVER }, parseAs: "stream" });
    expect(streamed.response.status).toBe(400);
    expect((streamed.error as { error: { details: { errors: { path: string }[] } } }).error.details.errors[0]!.path).toBe("/body/content");
    await expectNothing(alice, id, before);
  });

  it("refuses to regenerate the reply to a stored message over the limit (stored before it was lowered)", async () => {
    const id = await newConversation();
    const sent = await expectOk(send(alice, id, "Hello there"), 201);
    await knex()("messages").where({ id: sent.user_message.id }).update({ content: OVER });
    const before = await snapshot(alice, id);
    const params = { path: { id, message_id: sent.assistant_message.id } };
    const body = await expectRefused(service.clientFor(alice).POST("/v1/conversations/{id}/messages/{message_id}/regenerate", { params }), null);
    expect(body.error.message).toMatch(/^The message this reply answers is 761 tokens/);
    const streamed = await service.clientFor(alice).POST("/v1/conversations/{id}/messages/{message_id}/regenerate/stream", { params, parseAs: "stream" });
    expect(streamed.response.status).toBe(400);
    await expectNothing(alice, id, before);
  });

  it("tells another user of the conversation nothing but the limit, and stores nothing in it", async () => {
    const id = await newConversation();
    const before = await snapshot(alice, id);
    await expectApiError(send(bob, id, "Hello there"), 404, "not_found");
    await expectRefused(send(bob, id, OVER), "/body/content");
    await expectNothing(alice, id, before);
    expect(await used(bob)).toBe(0);
  });
});

describe("the other doors to the model", () => {
  it("refuses it in a room a persona answers, storing nothing; a room without personas takes it", async () => {
    const room = await makeRoom(service, alice, { persona_ids: [personaId], reply_mode: "all" });
    await addMember(service, alice, room.id, bob);
    const roomMessages = async () => Number((await knex()("room_messages").where({ room_id: room.id }).count({ n: "*" }).first())!.n);
    const [count, before] = [await roomMessages(), await snapshot(bob, null)];
    const body = await expectApiError(service.clientFor(bob).POST("/v1/rooms/{id}/messages", { params: { path: { id: room.id } }, body: { content: OVER } }), 400, "invalid_request");
    // The personas read the message with its author's name: that is what is counted.
    expect(body.error.message).toMatch(/^The message with its author's name is \d+ tokens, over the limit of 760 tokens/);
    expect(body.error.details?.errors?.[0]?.path).toBe("/body/content");
    expect(await roomMessages()).toBe(count);
    await expectNothing(bob, null, before);

    const quiet = await makeRoom(service, alice, {});
    await expectOk(service.clientFor(alice).POST("/v1/rooms/{id}/messages", { params: { path: { id: quiet.id } }, body: { content: OVER } }), 201);
  });

  it("refuses it in the studio's test chat", async () => {
    const before = await snapshot(alice, null);
    await expectRefused(service.clientFor(alice).POST("/v1/studio/{persona_id}/test-chat", { params: { path: { persona_id: personaId } }, body: { message: OVER } }), "/body/message");
    await expectNothing(alice, null, before);
  });

  it("refuses it at the OpenAI-compatible door in OpenAI's shape: context_length_exceeded", async () => {
    const before = await snapshot(bob, null);
    const { response, error } = await service.clientFor(bob).POST("/openai/v1/chat/completions", { body: { model: personaId, messages: [{ role: "user", content: OVER }] } });
    expect(response.status).toBe(400);
    expect(error).toEqual({
      error: { message: expect.stringContaining("is 761 tokens, over the limit of 760 tokens"), type: "invalid_request_error", param: "messages", code: "context_length_exceeded" },
    });
    await expectNothing(bob, null, before);
    // A long history is no refusal: what does not fit is left out, as in any chat.
    await expectOk(service.clientFor(bob).POST("/openai/v1/chat/completions", { body: { model: personaId, messages: [{ role: "user", content: FITS }, { role: "assistant", content: FITS }, { role: "user", content: "And?" }] } }));
  });
});

describe("with the default settings", () => {
  let defaults: TestService;
  let carol: TestUser;

  beforeAll(async () => {
    defaults = await startTestService();
    carol = await registerUser(defaults);
  });

  afterAll(() => defaults?.close());

  it("refuses the issue's 31,000-character message (CHAT_CONTEXT_TOKENS 8192): at most 3,576 tokens", async () => {
    const persona = await expectOk(defaults.clientFor(carol).POST("/v1/personas", { body: { name: "Nova", instructions: "You are Nova.", greeting_message: "Hello." } }), 201);
    const conversation = await expectOk(defaults.clientFor(carol).POST("/v1/conversations", { body: { persona_id: persona.id } }), 201);
    const content = "The quick brown fox jumps over the lazy dog. ".repeat(700).slice(0, 31_000);
    const body = await expectApiError(defaults.clientFor(carol).POST("/v1/conversations/{id}/messages", { params: { path: { id: conversation.id } }, body: { content } }), 400, "invalid_request");
    expect(body.error.message).toContain("over the limit of 3,576 tokens a message may have on this server (a context of 8,192 tokens, less 1,024 for the reply");
  });
});
