import { describe, expect, it } from "vitest";
import { createClient, NotFoundError, PermissionDeniedError, type ChatStreamEvent, type PersonaClient } from "../../sdk/src/index.ts";
import { expectApiError, expectOk } from "../support/assertions.ts";
import { useServiceWithFakeOpenAI } from "../support/fixtures.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";

// Issue 34 item 4: a key of the `chat` scope runs a whole chat as a chat client does
// (docs/adr/0292-a-chat-key-runs-a-whole-chat.md), and a 403 for a missing scope names the scope
// needed and a scope of each key vocabulary that grants it
// (docs/adr/0293-a-missing-scope-403-names-what-grants-the-operation.md).
// The model is the fake OpenAI server on loopback, so that a reply can be slow enough to stop.
const fx = useServiceWithFakeOpenAI({ AUTO_AVATARS: "false" });

const service = () => fx.service;
const sdkWithKey = (key: string) => createClient({ baseUrl: service().url, apiKey: key });
const withKey = (key: string) => service().clientFor({ auth: { "x-api-key": key } });

async function persona(user: TestUser, name: string, isPublic: boolean) {
  return expectOk(service().clientFor(user).POST("/v1/personas", { body: { name, instructions: `You are ${name}.`, greeting_message: "Ahoy!", is_public: isPublic } }), 201);
}

async function play(stream: AsyncIterable<ChatStreamEvent>): Promise<ChatStreamEvent[]> {
  const events: ChatStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

const doneOf = (events: ChatStreamEvent[]) => {
  const done = events.at(-1);
  expect(done?.type, JSON.stringify(events)).toBe("done");
  return done as Extract<ChatStreamEvent, { type: "done" }>;
};

async function refusal(call: Promise<unknown>): Promise<PermissionDeniedError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PermissionDeniedError);
  return error as PermissionDeniedError;
}

describe("a chat key runs a whole chat", () => {
  it("reads its account and personas, starts a conversation, sends, streams, regenerates, selects, edits, switches branches and stops (SDK)", async () => {
    const user = await registerUser(service());
    const own = await persona(user, "Nova", false);
    const key = await apiKeyFor(service(), user, ["chat"]);
    const client: PersonaClient = sdkWithKey(key);

    // Who is chatting, and with whom.
    expect(await client.auth.me()).toMatchObject({ id: user.id, username: user.username });
    const listed: string[] = [];
    for await (const summary of client.personas.list()) listed.push(summary.id);
    expect(listed).toContain(own.id);
    expect((await client.personas.get(own.id)).name).toBe("Nova");

    // Start, send (blocking) and stream.
    const conversation = await client.conversations.create({ persona_id: own.id, title: "chat key" });
    expect(conversation).toMatchObject({ persona_id: own.id, title: "chat key" });
    const sent = await client.conversations.send(conversation.id, { content: "Hello" });
    expect(sent.assistant_message.content).toBe("Echo: Hello");
    const streamed = doneOf(await play(client.conversations.stream(conversation.id, { content: "Tell me more" })));

    // Regenerate the last reply (blocking and streamed), choose the first one back.
    const alternative = await client.conversations.regenerate(conversation.id, streamed.message_id);
    expect(alternative).toMatchObject({ role: "assistant", alternative_count: 2 });
    doneOf(await play(client.conversations.regenerateStream(conversation.id, alternative.id)));
    expect((await client.conversations.select(conversation.id, streamed.message_id)).active_message_id).toBe(streamed.message_id);

    // Edit the first message into a new branch (blocking and streamed), then switch back.
    const edited = await client.conversations.edit(conversation.id, sent.user_message.id, { content: "Hello again" });
    expect(edited.assistant_message.content).toBe("Echo: Hello again");
    doneOf(await play(client.conversations.editStream(conversation.id, sent.user_message.id, { content: "Hello once more" })));
    const branches = (await client.conversations.branches(conversation.id)).data;
    expect(branches.length).toBeGreaterThanOrEqual(3);
    const first = branches.find((branch) => branch.last_message.id === streamed.message_id)!;
    expect(await client.conversations.activateBranch(conversation.id, first.leaf_id)).toMatchObject({ leaf_id: streamed.message_id, active: true });
    expect((await client.conversations.get(conversation.id)).active_message_id).toBe(streamed.message_id);

    // Stop a reply being written: the partial reply is kept.
    fx.fake.chat.next({ chunks: Array.from({ length: 40 }, (_, i) => `w${i} `), chunkDelayMs: 100 });
    const slow = client.conversations.stream(conversation.id, { content: "Talk for a while" });
    const events: ChatStreamEvent[] = [];
    for await (const event of slow) {
      events.push(event);
      if (events.filter((e) => e.type === "delta").length === 2) expect((await slow.stop()).status).toBe("stopped");
    }
    expect(doneOf(events).stopped).toBe(true);

    // Read it all back.
    const read = await client.conversations.get(conversation.id);
    expect(read.messages.at(-1)).toMatchObject({ role: "assistant", stopped: true });
    const messages: string[] = [];
    for await (const message of client.conversations.messages.list(conversation.id)) messages.push(message.id);
    expect(messages).toContain(streamed.message_id);
    const mine: string[] = [];
    for await (const item of client.conversations.list()) mine.push(item.id);
    expect(mine).toContain(conversation.id);
  });

  it("chats with another user's public persona", async () => {
    const [user, author] = [await registerUser(service()), await registerUser(service())];
    const shared = await persona(author, "Orion", true);
    const client = sdkWithKey(await apiKeyFor(service(), user, ["chat"]));
    const conversation = await client.conversations.create({ persona_id: shared.id });
    doneOf(await play(client.conversations.stream(conversation.id, { content: "Hi Orion" })));
    expect((await client.conversations.get(conversation.id)).messages.map((m) => m.content)).toContain("Echo: Hi Orion");
  });

  it("reaches nothing of another user's: their private persona, conversation and generation are 404", async () => {
    const [user, other] = [await registerUser(service()), await registerUser(service())];
    const hidden = await persona(other, "Secret", false);
    const theirs = await expectOk(service().clientFor(other).POST("/v1/conversations", { body: { persona_id: hidden.id } }), 201);
    const client = sdkWithKey(await apiKeyFor(service(), user, ["chat"]));
    await expect(client.conversations.create({ persona_id: hidden.id })).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.conversations.get(theirs.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.conversations.send(theirs.id, { content: "Hi" })).rejects.toBeInstanceOf(NotFoundError);
    const after = await expectOk(service().clientFor(other).GET("/v1/conversations/{id}", { params: { path: { id: theirs.id } } }));
    expect(after.messages.filter((m) => m.role === "user")).toEqual([]);
    expect((await withKey(await apiKeyFor(service(), user, ["chat"])).GET("/v1/conversations", { params: { query: { limit: 100 } } })).data?.data).toEqual([]);
  });

  it("does not delete conversations or change personas, rooms or the account", async () => {
    const user = await registerUser(service());
    const own = await persona(user, "Keeper", false);
    const key = await apiKeyFor(service(), user, ["chat"]);
    const client = sdkWithKey(key);
    const conversation = await client.conversations.create({ persona_id: own.id });
    const refusedDelete = await refusal(client.conversations.delete(conversation.id));
    expect(refusedDelete.details).toMatchObject({ required_scope: "conversations:write", granting_scopes: ["conversations:write", "admin"] });
    await refusal(client.personas.create({ name: "Nope", instructions: "No." }));
    await refusal(client.personas.update(own.id, { name: "Renamed" }));
    await refusal(client.auth.updateMe({ display_name: "Renamed" }));
    await refusal(client.rooms.create({ name: "Nope" }));
    // Nothing changed.
    expect((await client.conversations.get(conversation.id)).id).toBe(conversation.id);
    expect((await client.personas.get(own.id)).name).toBe("Keeper");
  });
});

describe("a 403 for a missing scope", () => {
  it("names the scope needed and a scope of each key vocabulary that grants it, in the message and the details", async () => {
    const user = await registerUser(service());
    const own = await persona(user, "Vega", false);
    const read = await apiKeyFor(service(), user, ["read"]);
    const fineRead = await apiKeyFor(service(), user, ["conversations:read", "personas:read"]);
    const chat = await apiKeyFor(service(), user, ["chat"]);

    // Starting a conversation: conversations:write, or chat.
    for (const key of [read, fineRead]) {
      const body = await expectApiError(withKey(key).POST("/v1/conversations", { body: { persona_id: own.id } }), 403, "forbidden");
      expect(body.error.message).toBe(
        'This credential lacks the "conversations:write" scope this operation needs; "conversations:write" of the fine-grained scopes or "chat" of the read/chat/admin scopes grants it (as does "admin")',
      );
      expect(body.error.details).toEqual({ required_scope: "conversations:write", granting_scopes: ["conversations:write", "chat", "admin"] });
    }
    // Nothing was started by the refused calls.
    expect((await expectOk(service().clientFor(user).GET("/v1/conversations", { params: { query: { limit: 100 } } }))).data).toEqual([]);

    // The account: admin among the fine-grained scopes, chat among the others.
    const account = await expectApiError(withKey(fineRead).GET("/v1/auth/me"), 403, "forbidden");
    expect(account.error.message).toContain('"admin" of the fine-grained scopes or "chat" of the read/chat/admin scopes');
    expect(account.error.details).toEqual({ required_scope: "admin", granting_scopes: ["chat", "admin"] });

    // A persona change: personas:write, or admin of the other vocabulary.
    const create = await expectApiError(withKey(chat).POST("/v1/personas", { body: { name: "X", instructions: "Y" } }), 403, "forbidden");
    expect(create.error.message).toContain('"personas:write" of the fine-grained scopes or "admin" of the read/chat/admin scopes grants it');
    expect(create.error.details).toEqual({ required_scope: "personas:write", granting_scopes: ["personas:write", "admin"] });

    // Admin-only operations say so.
    const webhook = await expectApiError(withKey(chat).POST("/v1/webhooks", { body: { url: "https://example.com/hook", events: ["message.created"] } }), 403, "forbidden");
    expect(webhook.error.message).toBe('This credential lacks the "admin" scope this operation needs; only "admin" grants it, in either scope vocabulary');
    expect(webhook.error.details).toEqual({ required_scope: "admin", granting_scopes: ["admin"] });
  });
});
