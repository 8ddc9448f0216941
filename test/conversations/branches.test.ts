import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { expectError } from "../support/assertions.ts";
import { createConversation, createPersona, readEvents, sendBlocking } from "../support/chat.ts";
import { useServiceWithFakeOpenAI } from "../support/fixtures.ts";
import { sendRaw } from "../support/raw.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// Editing an earlier user message starts a branch; branches are listed and switched, and the
// message list, the read, search and the model's context follow the active one. Nothing is lost.
const fx = useServiceWithFakeOpenAI({ LLM_TIMEOUT_MS: "5000", STREAM_KEEPALIVE_MS: "150" });

const knex = () => fx.service.services.db.knex;
const chatCalls = () => fx.fake.requests.filter((request) => request.path === "/v1/chat/completions");
const lastContext = () => (chatCalls().at(-1)!.body as { messages: { role: string; content: string }[] }).messages.map((turn) => turn.content);
// Exchanged messages: the greeting stored at creation (depth 0) is not one.
const countMessages = async (conversationId: string) => Number((await knex()("messages").where({ conversation_id: conversationId }).where("depth", ">", 0).count({ n: "*" }).first())?.n ?? 0);
const get = async (user: TestUser, path: string) => (await fx.service.fetch(path, { headers: user.auth })).json();
const edit = (user: TestUser, conversationId: string, messageId: string, content: string) =>
  fx.service.clientFor(user).POST("/v1/conversations/{id}/messages/{message_id}/edit", { params: { path: { id: conversationId, message_id: messageId } }, body: { content } });
const editStream = (user: TestUser, conversationId: string, messageId: string, content: string) =>
  fx.service.clientFor(user).POST("/v1/conversations/{id}/messages/{message_id}/edit/stream", {
    params: { path: { id: conversationId, message_id: messageId } },
    body: { content },
    parseAs: "stream",
  });
const activate = (user: TestUser, conversationId: string, leafId: string) =>
  fx.service.fetch(`/v1/conversations/${conversationId}/branches/${leafId}/activate`, { method: "POST", headers: user.auth });

const personas = new Map<string, { id: string }>();

/** A conversation of two exchanges after its greeting (q1's parent): q1, r1, q2, r2. */
async function twoExchanges(user: TestUser, title: string) {
  const persona = personas.get(user.id) ?? (await createPersona(fx.service, user, { instructions: "You are Captain Nova.", greeting_message: "Welcome aboard!" }));
  personas.set(user.id, persona);
  const conversation = await createConversation(fx.service, user, persona.id, title);
  const first = await (await sendBlocking(fx.service, user, conversation.id, "Tell me about Venus")).json();
  const second = await (await sendBlocking(fx.service, user, conversation.id, "Tell me about Saturn")).json();
  return { conversation, q1: first.user_message, r1: first.assistant_message, q2: second.user_message, r2: second.assistant_message };
}

describe("editing a user message", () => {
  it("starts an active branch from the edited message's parent and keeps the old one", async () => {
    const { conversation, q1, r1, q2, r2 } = await twoExchanges(fx.alice, "edit");
    const { data, error, response } = await edit(fx.alice, conversation.id, q2.id, "Tell me about Jupiter");
    expect(response.status, JSON.stringify(error ?? data)).toBe(201);
    const body = data!;
    expect(body.user_message).toMatchObject({ role: "user", content: "Tell me about Jupiter", parent_id: r1.id, alternative_index: 1, alternative_count: 2 });
    expect(body.assistant_message).toMatchObject({ role: "assistant", content: "Echo: Tell me about Jupiter", parent_id: body.user_message.id });
    // The model saw the path up to the edited message's parent, not the old question.
    expect(lastContext()).toEqual(["You are Captain Nova.", "Welcome aboard!", "Tell me about Venus", "Echo: Tell me about Venus", "Tell me about Jupiter"]);

    const detail = await get(fx.alice, `/v1/conversations/${conversation.id}`);
    expect(detail).toMatchObject({ message_count: 4, active_message_id: body.assistant_message.id });
    expect(detail.messages.map((m: { id: string }) => m.id)).toEqual([q1.parent_id, q1.id, r1.id, body.user_message.id, body.assistant_message.id]);
    const list = await get(fx.alice, `/v1/conversations/${conversation.id}/messages?limit=2`);
    expect(list.data.map((m: { id: string }) => m.id)).toEqual([body.assistant_message.id, body.user_message.id]);
    expect(list.has_more).toBe(true);
    const older = await get(fx.alice, `/v1/conversations/${conversation.id}/messages?before=${body.user_message.id}`);
    expect(older.data.map((m: { id: string }) => m.id)).toEqual([r1.id, q1.id, q1.parent_id]);

    // Search follows the active path: Saturn is on the other branch now.
    expect((await get(fx.alice, "/v1/conversations/search?q=saturn")).total).toBe(0);
    expect((await get(fx.alice, "/v1/conversations/search?q=jupiter")).total).toBe(2);

    const branches = await get(fx.alice, `/v1/conversations/${conversation.id}/branches`);
    expect(branches).toMatchObject({ total: 2, has_more: false });
    expect(branches.data.map((b: { leaf_id: string; fork_point_id: string | null; message_count: number; active: boolean }) => [b.leaf_id, b.fork_point_id, b.message_count, b.active]))
      .toEqual([[body.assistant_message.id, r1.id, 5, true], [r2.id, r1.id, 5, false]]);
    expect(branches.data[1].last_message).toMatchObject({ id: r2.id, content: "Echo: Tell me about Saturn" });

    // Switching back: the list, the count and the next reply's context follow the old branch.
    const switched = await activate(fx.alice, conversation.id, r2.id);
    expect(switched.status).toBe(200);
    // The branch counts its greeting too: one more than the conversation's exchanged messages.
    expect(await switched.json()).toMatchObject({ leaf_id: r2.id, active: true, message_count: 5 });
    expect((await get(fx.alice, `/v1/conversations/${conversation.id}/messages`)).data.map((m: { id: string }) => m.id)).toEqual([r2.id, q2.id, r1.id, q1.id, q1.parent_id]);
    expect((await get(fx.alice, "/v1/conversations/search?q=saturn")).total).toBe(2);
    await sendBlocking(fx.service, fx.alice, conversation.id, "And its rings?");
    expect(lastContext()).toContain("Tell me about Saturn");
    expect(lastContext()).not.toContain("Tell me about Jupiter");
    expect(await countMessages(conversation.id)).toBe(8);
  });

  it("edits the first message into a branch of its own, streamed", async () => {
    const { conversation, q1 } = await twoExchanges(fx.alice, "edit first");
    const { response } = await editStream(fx.alice, conversation.id, q1.id, "Tell me about Mercury");
    expect(response.status).toBe(200);
    const { events } = await readEvents(response);
    expect(events.at(-1)!.event).toBe("done");
    expect(lastContext()).toEqual(["You are Captain Nova.", "Welcome aboard!", "Tell me about Mercury"]);
    const detail = await get(fx.alice, `/v1/conversations/${conversation.id}`);
    expect(detail.message_count).toBe(2);
    // The greeting stays first: the edited first message is its new child.
    expect(detail.messages[0]).toMatchObject({ id: q1.parent_id, greeting: true });
    expect(detail.messages[1]).toMatchObject({ content: "Tell me about Mercury", parent_id: q1.parent_id, alternative_index: 1, alternative_count: 2 });
    const branches = await get(fx.alice, `/v1/conversations/${conversation.id}/branches?limit=1`);
    expect(branches).toMatchObject({ total: 2, has_more: true });
    expect(branches.data[0]).toMatchObject({ fork_point_id: q1.parent_id, message_count: 3, active: true });

    // Choosing the original first message continues from its newest leaf.
    const chosen = await fx.service.fetch(`/v1/conversations/${conversation.id}/messages/${q1.id}/select`, { method: "POST", headers: fx.alice.auth });
    expect((await chosen.json()).message_count).toBe(4);
    expect(await countMessages(conversation.id)).toBe(6);
  });

  it("refuses bad input and assistant messages with nothing written", async () => {
    const { conversation, r1, q2 } = await twoExchanges(fx.alice, "edit rules");
    await expectError(await edit(fx.alice, conversation.id, q2.id, ""), 400, "invalid_request");
    await expectError(await edit(fx.alice, conversation.id, q2.id, "x".repeat(32_001)), 400, "invalid_request");
    await expectError(
      await sendRaw(fx.service, "POST", `/v1/conversations/${conversation.id}/messages/${q2.id}/edit`, { body: { content: 42 }, headers: fx.alice.auth }),
      400,
      "invalid_request",
    );
    await expectError(await edit(fx.alice, conversation.id, r1.id, "not a user message"), 409, "conflict");
    await expectError(await edit(fx.alice, conversation.id, randomUUID(), "unknown"), 404, "not_found");
    await expectError(await activate(fx.alice, conversation.id, r1.id), 404, "not_found");
    await expectError(await activate(fx.alice, conversation.id, randomUUID()), 404, "not_found");
    expect(await countMessages(conversation.id)).toBe(4);
  });

  it("is 404 for another user's conversation, message and branch", async () => {
    const { conversation, q2, r2 } = await twoExchanges(fx.alice, "edit access");
    const mallory = await registerUser(fx.service);
    await expectError(await edit(mallory, conversation.id, q2.id, "mine now"), 404, "not_found");
    await expectError(await editStream(mallory, conversation.id, q2.id, "mine now"), 404, "not_found");
    await expectError(await activate(mallory, conversation.id, r2.id), 404, "not_found");
    await expectError(await fx.service.fetch(`/v1/conversations/${conversation.id}/branches`, { headers: mallory.auth }), 404, "not_found");
    const own = await twoExchanges(mallory, "mallory's");
    await expectError(await edit(fx.alice, conversation.id, own.q2.id, "theirs"), 404, "not_found");
    await expectError(await activate(fx.alice, conversation.id, own.r2.id), 404, "not_found");
    expect(await countMessages(conversation.id)).toBe(4);
  });
});
