import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { createConversation, createPersona, sendBlocking, sendStream } from "../support/chat.ts";
import { generationOf, readIdEvents } from "../support/generations.ts";
import { fakeUpstreamEnv } from "../support/openai-door.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";
import { addMember, makeRoom } from "../rooms/helpers.ts";

// Checking the model's replies (issue 41, item 5, off by default): with MODERATION_CHECK_REPLIES
// and a provider (here the offline word list with the operator's own word), every reply is checked
// before it is stored. A flagged one is not stored and no quota is used: a send answers 502
// `reply_flagged`, a stream ends with that `error`, a room post is stored without it, and the
// OpenAI-compatible door answers as OpenAI does for a filtered completion, `finish_reason:
// content_filter` (the official `openai` package here). Without the setting, the same reply is stored.
const dir = mkdtempSync(join(tmpdir(), "persona-reply-wordlist-"));
const wordList = join(dir, "words.txt");
writeFileSync(wordList, "gloomberry\n");
const FLAGGED = ["Try", " the", " gloomberry", " pie."];
const CLEAN = ["Try", " the", " apple", " pie."];

let fake: FakeOpenAI;
let service: TestService;
let alice: TestUser;
let persona: { id: string };

beforeAll(async () => {
  fake = await startFakeOpenAI();
  service = await startTestService({ env: { ...fakeUpstreamEnv(fake), MODERATION_PROVIDER: "wordlist", MODERATION_WORDLIST: wordList, MODERATION_CHECK_REPLIES: "true" } });
  alice = await registerUser(service);
  persona = await createPersona(service, alice, { name: "Chef Mallow", instructions: "You suggest desserts." });
}, 120_000);
afterAll(async () => {
  await service?.close();
  await fake?.close();
});
beforeEach(() => fake.reset());

const knex = () => service.services.db.knex;
const used = async (user: TestUser) => Number((await knex()("usage_counters").where({ user_id: user.id }).sum({ n: "messages_sent" }).first())?.n ?? 0);
const messagesOf = (conversationId: string) => knex()("messages").where({ conversation_id: conversationId }).orderBy("id").select("role", "content");

describe(`replies checked by the content policy (${databaseKind})`, () => {
  it("a flagged blocking reply: 502 reply_flagged with the categories, nothing stored, no quota used", async () => {
    const conversation = await createConversation(service, alice, persona.id, "flagged");
    const [before, quota] = [await messagesOf(conversation.id), await used(alice)];
    fake.chat.next({ chunks: FLAGGED });
    const response = await sendBlocking(service, alice, conversation.id, "What should I bake?");
    expect(response.status).toBe(502);
    const body = await response.json();
    expect(body.error).toMatchObject({ code: "reply_flagged", message: expect.stringContaining("content policy"), details: { categories: expect.any(Array), provider: "wordlist" } });
    expect(await messagesOf(conversation.id)).toEqual(before);
    expect(await used(alice)).toBe(quota);

    // A clean reply goes through as ever.
    fake.chat.next({ chunks: CLEAN });
    const clean = await sendBlocking(service, alice, conversation.id, "And something else?");
    expect(clean.status).toBe(201);
    expect((await clean.json()).assistant_message.content).toBe(CLEAN.join(""));
  });

  it("a flagged streamed reply ends with error reply_flagged; the user message stays, no reply is stored, the generation failed", async () => {
    const conversation = await createConversation(service, alice, persona.id, "flagged stream");
    const before = await messagesOf(conversation.id);
    fake.chat.next({ chunks: FLAGGED });
    const events = await readIdEvents(await sendStream(service, alice, conversation.id, "What should I bake?"));
    expect(events.map((e) => e.event)).toEqual(["start", "delta", "delta", "delta", "delta", "error"]);
    expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ code: "reply_flagged" });
    expect(await messagesOf(conversation.id)).toEqual([...before, { role: "user", content: "What should I bake?" }]);
    const generation = await (await service.fetch(`/v1/conversations/${conversation.id}/generations/${generationOf(events)}`, { headers: alice.auth })).json();
    expect(generation).toMatchObject({ status: "failed", reply_message_id: null });
  });

  it("a flagged room reply is not stored; the post is, and the answer says why", async () => {
    const bob = await registerUser(service);
    const room = await makeRoom(service, alice, { persona_ids: [persona.id], reply_mode: "all" });
    await addMember(service, alice, room.id, bob);
    fake.chat.next({ chunks: FLAGGED });
    const posted = await service.clientFor(bob).POST("/v1/rooms/{id}/messages", { params: { path: { id: room.id } }, body: { content: "Chef, a dessert?" } });
    // As when the model fails: the post is stored and the error carries it.
    expect(posted.response.status).toBe(502);
    const error = (posted.error as unknown as { error: { code: string; details: { message: { content: string } } } }).error;
    expect(error).toMatchObject({ code: "reply_flagged", details: { message: { content: "Chef, a dessert?" } } });
    expect((await knex()("room_messages").where({ room_id: room.id }).select("sender_type")).map((m) => m.sender_type)).toEqual(["user"]);
  });

  it("at the OpenAI-compatible door, blocking and streamed: finish_reason content_filter, no text, the tokens it took", async () => {
    const openai = new OpenAI({ baseURL: `${service.url}/openai/v1`, apiKey: await apiKeyFor(service, alice, ["chat"]), maxRetries: 0 });
    fake.chat.next({ chunks: FLAGGED });
    const completion = await openai.chat.completions.create({ model: persona.id, messages: [{ role: "user", content: "What should I bake?" }] });
    expect(completion.choices[0]).toMatchObject({ finish_reason: "content_filter", message: { role: "assistant", content: "" } });
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0);

    fake.chat.next({ chunks: FLAGGED });
    const stream = await openai.chat.completions.create({ model: persona.id, messages: [{ role: "user", content: "What should I bake?" }], stream: true, stream_options: { include_usage: true } });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const finishes = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.finish_reason)).filter(Boolean);
    expect(finishes).toEqual(["content_filter"]);
    expect(chunks.at(-1)?.usage?.completion_tokens).toBeGreaterThan(0);
  });
});

describe(`replies not checked by default (${databaseKind})`, () => {
  it("stores the same reply when MODERATION_CHECK_REPLIES is unset, even with a provider", async () => {
    const unchecked = await startTestService({ env: { ...fakeUpstreamEnv(fake), MODERATION_PROVIDER: "wordlist", MODERATION_WORDLIST: wordList } });
    try {
      const user = await registerUser(unchecked);
      const own = await createPersona(unchecked, user, { name: "Chef Unchecked" });
      const conversation = await createConversation(unchecked, user, own.id, "unchecked");
      fake.chat.next({ chunks: FLAGGED });
      const response = await sendBlocking(unchecked, user, conversation.id, "What should I bake?");
      expect(response.status).toBe(201);
      expect((await response.json()).assistant_message.content).toBe(FLAGGED.join(""));
    } finally {
      await unchecked.close();
    }
  });
});
