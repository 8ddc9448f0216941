import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countChatTokens, countTokens } from "../../server/toolkit/providers/llm/tokens.ts";
import { createConversation, createPersona, readEvents, sendBlocking, sendStream } from "../support/chat.ts";
import { useServiceWithFakeOpenAI } from "../support/fixtures.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// Issue 21: assistant messages carry the tokens the reply took (the provider's numbers, or the
// local tokenizer's for the offline model); the conversation carries the totals.
type Usage = { input_tokens: number; output_tokens: number };
const sum = (usages: Usage[]) => usages.reduce((t, u) => ({ input_tokens: t.input_tokens + u.input_tokens, output_tokens: t.output_tokens + u.output_tokens }), { input_tokens: 0, output_tokens: 0 });

describe(`usage with a provider (${databaseKind})`, () => {
  const ctx = useServiceWithFakeOpenAI({});

  it("is the provider's count on each reply, and the conversation's totals add them up", async () => {
    const { service, alice, fake } = ctx;
    const persona = await createPersona(service, alice);
    const conversation = await createConversation(service, alice, persona.id, "usage");
    expect(conversation).toMatchObject({ usage: { input_tokens: 0, output_tokens: 0 } });
    fake.chat.next({ reply: "A blocking reply of a few words." });
    const blocking = await (await sendBlocking(service, alice, conversation.id, "first")).json();
    fake.chat.next({ chunks: ["A streamed", " reply."] });
    const { events } = await readEvents(await sendStream(service, alice, conversation.id, "second"));
    const done = JSON.parse(events.at(-1)!.data);

    // The fake counts about four characters a token; what it reported is what is stored.
    const sent = fake.requests.filter((r) => r.path === "/v1/chat/completions");
    expect(sent).toHaveLength(2);
    expect(blocking.assistant_message.usage).toEqual({ input_tokens: expect.any(Number), output_tokens: Math.ceil("A blocking reply of a few words.".length / 4) });
    expect(blocking.user_message.usage).toBeUndefined();
    const list = await (await service.fetch(`/v1/conversations/${conversation.id}/messages`, { headers: alice.auth })).json();
    const replies = list.data.filter((m: { role: string; greeting?: true }) => m.role === "assistant" && !m.greeting);
    expect(replies.map((m: { usage: Usage }) => m.usage)).toEqual([done.usage, blocking.assistant_message.usage]);
    // The greeting used no model of this conversation: no usage.
    expect(list.data.at(-1)).toMatchObject({ greeting: true });
    expect(list.data.at(-1).usage).toBeUndefined();
    const read = await (await service.fetch(`/v1/conversations/${conversation.id}`, { headers: alice.auth })).json();
    expect(read.usage).toEqual(sum([done.usage, blocking.assistant_message.usage]));
    const listed = await (await service.fetch(`/v1/conversations`, { headers: alice.auth })).json();
    expect(listed.data.find((c: { id: string }) => c.id === conversation.id).usage).toEqual(read.usage);
  });

  it("leaves the totals unchanged when the provider fails", async () => {
    const { service, alice, fake } = ctx;
    const persona = await createPersona(service, alice);
    const conversation = await createConversation(service, alice, persona.id, "failing");
    fake.chat.next({ status: 500 });
    expect((await sendBlocking(service, alice, conversation.id, "x")).status).toBe(502);
    fake.chat.next({ status: 500 });
    await readEvents(await sendStream(service, alice, conversation.id, "y"));
    const read = await (await service.fetch(`/v1/conversations/${conversation.id}`, { headers: alice.auth })).json();
    expect(read.usage).toEqual({ input_tokens: 0, output_tokens: 0 });
  });
});

describe(`usage with the offline model (${databaseKind})`, () => {
  let service: TestService;
  let alice: TestUser;
  beforeAll(async () => {
    service = await startTestService();
    alice = await registerUser(service);
  });
  afterAll(async () => {
    await service?.close();
  });

  it("is the local tokenizer's count of the context and the reply", async () => {
    const persona = await createPersona(service, alice);
    const conversation = await createConversation(service, alice, persona.id, "offline");
    const { events } = await readEvents(await sendStream(service, alice, conversation.id, "How far is the Moon?"));
    const done = JSON.parse(events.at(-1)!.data);
    const reply = await service.services.db.knex("messages").where({ id: done.message_id }).first();
    expect(done.usage).toEqual({ input_tokens: reply.input_tokens, output_tokens: countTokens(reply.content) });
    expect(done.usage.input_tokens).toBeGreaterThan(countChatTokens([{ role: "user", content: "How far is the Moon?" }]));
    const read = await (await service.fetch(`/v1/conversations/${conversation.id}`, { headers: alice.auth })).json();
    expect(read.usage).toEqual(done.usage);
    expect(read.messages.at(-1).usage).toEqual(done.usage);
  });
});
