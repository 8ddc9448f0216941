import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { expectError } from "../support/assertions.ts";
import { createConversation, createPersona, readEvents, sendBlocking } from "../support/chat.ts";
import { eventually } from "../support/wait.ts";
import { useServiceWithFakeOpenAI } from "../support/fixtures.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// Regenerating the last reply: an alternative of the same turn, through the reply engine and the
// fake OpenAI server on loopback, so that the context the model gets can be compared.
const fx = useServiceWithFakeOpenAI({ LLM_TIMEOUT_MS: "5000", STREAM_KEEPALIVE_MS: "150" });

const knex = () => fx.service.services.db.knex;
const chatCalls = () => fx.fake.requests.filter((request) => request.path === "/v1/chat/completions");
const contextOf = (index: number) => (chatCalls()[index]!.body as { messages: { role: string; content: string }[] }).messages;
const used = async (user: TestUser) => Number((await knex()("usage_counters").where({ user_id: user.id }).sum({ n: "messages_sent" }).first())?.n ?? 0);
// Exchanged messages: the greeting stored at creation (depth 0) is not one.
const countMessages = async (conversationId: string) => Number((await knex()("messages").where({ conversation_id: conversationId }).where("depth", ">", 0).count({ n: "*" }).first())?.n ?? 0);

const regenerate = (user: TestUser, conversationId: string, messageId: string, stream = false) =>
  fx.service.fetch(`/v1/conversations/${conversationId}/messages/${messageId}/regenerate${stream ? "/stream" : ""}`, { method: "POST", headers: user.auth });
const select = (user: TestUser, conversationId: string, messageId: string) =>
  fx.service.fetch(`/v1/conversations/${conversationId}/messages/${messageId}/select`, { method: "POST", headers: user.auth });
const read = async (user: TestUser, conversationId: string) => (await fx.service.fetch(`/v1/conversations/${conversationId}`, { headers: user.auth })).json();

// The free plan allows three personas: one per user serves every conversation.
const personas = new Map<string, { id: string }>();

async function exchange(user: TestUser, title: string, content = "Which planet is that?") {
  const persona = personas.get(user.id) ?? (await createPersona(fx.service, user, { instructions: "You are Captain Nova.", greeting_message: "Welcome aboard!" }));
  personas.set(user.id, persona);
  const conversation = await createConversation(fx.service, user, persona.id, title);
  fx.fake.chat.next({ reply: "That is Venus." });
  const sent = await (await sendBlocking(fx.service, user, conversation.id, content)).json();
  return { conversation, persona, question: sent.user_message, first: sent.assistant_message };
}

describe("regenerating the last reply", () => {
  it("adds an alternative from the same context, makes it active and counts it", async () => {
    const { conversation, question, first } = await exchange(fx.alice, "regen");
    const quota = await used(fx.alice);
    fx.fake.chat.next({ reply: "Venus, the evening star." });
    const response = await regenerate(fx.alice, conversation.id, first.id);
    const body = await response.json();
    expect(response.status, JSON.stringify(body)).toBe(201);
    expect(body).toMatchObject({ role: "assistant", content: "Venus, the evening star.", parent_id: question.id, alternative_index: 1, alternative_count: 2, citations: [] });
    // The same context as the first answer: instructions, greeting, the user message.
    expect(contextOf(1)).toEqual(contextOf(0));
    expect(await used(fx.alice)).toBe(quota + 1);

    const detail = await read(fx.alice, conversation.id);
    expect(detail).toMatchObject({ message_count: 2, active_message_id: body.id });
    // The greeting opens the path; the regenerated reply takes the first one's place after the question.
    expect(detail.messages.map((m: { id: string; greeting?: true }) => [m.id, m.greeting ?? false])).toEqual([[question.parent_id, true], [question.id, false], [body.id, false]]);
    const event = await knex()("event_outbox").where({ type: "message.created" }).whereRaw("data->>'message_id' = ?", [body.id]).first();
    expect(event.data).toMatchObject({ role: "assistant", parent_id: question.id, alternative_index: 1 });

    // Choosing the first answer puts it back in the active path; only it is in later context.
    const chosen = await select(fx.alice, conversation.id, first.id);
    expect(chosen.status).toBe(200);
    const chosenBody = await chosen.json();
    expect(chosenBody.active_message_id).toBe(first.id);
    expect(chosenBody.messages.map((m: { id: string; alternative_index: number; alternative_count: number }) => [m.id, m.alternative_index, m.alternative_count]))
      .toEqual([[question.parent_id, 0, 1], [question.id, 0, 1], [first.id, 0, 2]]);
    fx.fake.chat.next({ reply: "Mars is red." });
    await sendBlocking(fx.service, fx.alice, conversation.id, "And the red one?");
    const later = contextOf(2).map((turn) => turn.content);
    expect(later).toContain("That is Venus.");
    expect(later).not.toContain("Venus, the evening star.");
    expect(await countMessages(conversation.id)).toBe(5);
  });

  it("streams an alternative with the send's events", async () => {
    const { conversation, question, first } = await exchange(fx.alice, "regen stream");
    fx.fake.chat.next({ chunks: ["Venus", ", again"] });
    const response = await regenerate(fx.alice, conversation.id, first.id, true);
    expect(response.status).toBe(200);
    const { events } = await readEvents(response);
    expect(events.map((e) => e.event)).toEqual(["start", "delta", "delta", "done"]);
    const done = JSON.parse(events.at(-1)!.data);
    const stored = await knex()("messages").where({ id: done.message_id }).first();
    expect(stored).toMatchObject({ parent_id: question.id, content: "Venus, again", role: "assistant" });
    expect((await read(fx.alice, conversation.id)).active_message_id).toBe(done.message_id);
  });

  it("is 409 for any message but the active path's last reply, and stores nothing", async () => {
    const { conversation, question, first } = await exchange(fx.alice, "regen rules");
    await expectError(await regenerate(fx.alice, conversation.id, question.id), 409, "conflict");
    fx.fake.chat.next({ reply: "Second answer." });
    await sendBlocking(fx.service, fx.alice, conversation.id, "Another question");
    await expectError(await regenerate(fx.alice, conversation.id, first.id), 409, "conflict");
    expect(await countMessages(conversation.id)).toBe(4);
  });

  it("is 409 while another regeneration of the conversation is being answered", async () => {
    const { conversation, first } = await exchange(fx.alice, "regen busy");
    fx.fake.chat.next({ reply: "Slow answer.", firstTokenDelayMs: 1500 });
    const slow = regenerate(fx.alice, conversation.id, first.id);
    await eventually(async () => (await knex()("conversations").where({ id: conversation.id }).first()).reply_lease_until !== null);
    await expectError(await regenerate(fx.alice, conversation.id, first.id), 409, "conflict");
    expect((await slow).status).toBe(201);
    expect((await knex()("conversations").where({ id: conversation.id }).first()).reply_lease_until).toBeNull();
  });

  it("answers 402 when the quota is used up and 502 when the provider fails, storing nothing", async () => {
    const bob = await registerUser(fx.service);
    const { conversation, first } = await exchange(bob, "regen quota");
    fx.fake.chat.next({ status: 500 });
    await expectError(await regenerate(bob, conversation.id, first.id), 502, "upstream_error");
    expect(await countMessages(conversation.id)).toBe(2);
    const period = new Date().toISOString().slice(0, 8) + "01";
    await knex()("usage_counters").where({ user_id: bob.id, period_start: period }).update({ messages_sent: 200 });
    const calls = chatCalls().length;
    await expectError(await regenerate(bob, conversation.id, first.id), 402, "plan_limit_exceeded");
    await expectError(await regenerate(bob, conversation.id, first.id, true), 402, "plan_limit_exceeded");
    expect(chatCalls()).toHaveLength(calls);
    expect(await countMessages(conversation.id)).toBe(2);
    expect((await read(bob, conversation.id)).active_message_id).toBe(first.id);
  });

  it("is 404 for another user's conversation or message and for unknown ids, 400 for malformed ones", async () => {
    const { conversation, first } = await exchange(fx.alice, "regen access");
    const mallory = await registerUser(fx.service);
    await expectError(await regenerate(mallory, conversation.id, first.id), 404, "not_found");
    await expectError(await regenerate(mallory, conversation.id, first.id, true), 404, "not_found");
    await expectError(await select(mallory, conversation.id, first.id), 404, "not_found");
    await expectError(await regenerate(fx.alice, conversation.id, randomUUID()), 404, "not_found");
    await expectError(await select(fx.alice, conversation.id, randomUUID()), 404, "not_found");
    const other = await exchange(mallory, "mallory's");
    await expectError(await regenerate(fx.alice, conversation.id, other.first.id), 404, "not_found");
    await expectError(await regenerate(fx.alice, conversation.id, "not-a-uuid"), 400, "invalid_request");
    expect(await countMessages(conversation.id)).toBe(2);
  });
});
