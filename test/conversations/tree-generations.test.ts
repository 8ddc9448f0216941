import { describe, expect, it } from "vitest";
import { expectError } from "../support/assertions.ts";
import { createConversation, sendBlocking, sendStream } from "../support/chat.ts";
import { eventually } from "../support/wait.ts";
import { contentOf, generationOf, readIdEvents, stopMidReply, useTwoProcesses, type IdEvent } from "../support/generations.ts";
import { databaseKind, type TestService } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";

// Issue 21: regenerated and edited replies, streamed, run as generations like a streamed send: the
// client that leaves does not end them, another process resumes and stops them, and the
// conversation's reply lease ends with the generation.
const ctx = useTwoProcesses();
const knex = () => ctx.a.services.db.knex;
const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i} `);
const used = async (user: TestUser) => Number((await knex()("usage_counters").where({ user_id: user.id }).sum({ n: "messages_sent" }).first())?.n ?? 0);

const post = (service: TestService, user: TestUser, path: string, body?: unknown) =>
  service.fetch(path, {
    method: "POST",
    headers: { ...user.auth, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
const regenerateStream = (user: TestUser, conversationId: string, messageId: string) =>
  post(ctx.a, user, `/v1/conversations/${conversationId}/messages/${messageId}/regenerate/stream`);
const editStream = (user: TestUser, conversationId: string, messageId: string, content: string) =>
  post(ctx.a, user, `/v1/conversations/${conversationId}/messages/${messageId}/edit/stream`, { content });
const resume = (service: TestService, user: TestUser, conversationId: string, generationId: string, lastEventId: string) =>
  service.fetch(`/v1/conversations/${conversationId}/generations/${generationId}/stream`, { headers: { ...user.auth, "last-event-id": lastEventId } });

async function exchange(title: string) {
  const conversation = await createConversation(ctx.a, ctx.alice, ctx.persona.id, title);
  ctx.fake.chat.next({ reply: "That is Venus." });
  const sent = await (await sendBlocking(ctx.a, ctx.alice, conversation.id, "Which planet is that?")).json();
  ctx.fake.reset();
  return { conversation, question: sent.user_message, first: sent.assistant_message };
}

describe(`streamed regenerations and edits as generations (${databaseKind}: ${databaseKind === "postgres" ? "two API processes" : "one process"})`, () => {
  it("a regeneration outlives its client, and another process resumes it from the last event seen", async () => {
    const { conversation, question, first } = await exchange("regen outlives");
    ctx.fake.chat.next({ chunks: words(8), chunkDelayMs: 80 });
    const seen = await readIdEvents(await regenerateStream(ctx.alice, conversation.id, first.id), (events) => events.filter((e) => e.event === "delta").length >= 2);
    expect(seen[0]).toMatchObject({ id: "1", event: "start" });
    const generationId = generationOf(seen);

    const rest = await readIdEvents(await resume(ctx.b, ctx.alice, conversation.id, generationId, seen.at(-1)!.id!));
    expect(Number(rest[0]!.id)).toBe(Number(seen.at(-1)!.id) + 1);
    expect(contentOf(seen) + contentOf(rest)).toBe(words(8).join(""));
    const done = JSON.parse(rest.at(-1)!.data) as { message_id: string };
    expect(rest.at(-1)!.event).toBe("done");

    const stored = await knex()("messages").where({ id: done.message_id }).first();
    expect(stored).toMatchObject({ role: "assistant", parent_id: question.id, content: words(8).join("") });
    const generation = await (await ctx.b.fetch(`/v1/conversations/${conversation.id}/generations/${generationId}`, { headers: ctx.alice.auth })).json();
    expect(generation).toMatchObject({ status: "done", user_message_id: question.id, reply_message_id: done.message_id });
    // The lease ended with the generation: the next regeneration is taken.
    await eventually(async () => (await knex()("conversations").where({ id: conversation.id }).first()).reply_lease_until === null);
    ctx.fake.chat.next({ reply: "Venus, a third time." });
    expect((await post(ctx.a, ctx.alice, `/v1/conversations/${conversation.id}/messages/${done.message_id}/regenerate`)).status).toBe(201);
  });

  it("an edit is stopped from another process: the partial reply is stored on the new branch, marked stopped, counted once", async () => {
    const { conversation, question } = await exchange("edit stopped");
    const before = await used(ctx.alice);
    ctx.fake.chat.next({ chunks: words(50), chunkDelayMs: 150 });
    const response = await editStream(ctx.alice, conversation.id, question.id, "And the red one?");
    const { generation, events: all } = await stopMidReply(ctx.fake, response, (generationId) =>
      post(ctx.b, ctx.alice, `/v1/conversations/${conversation.id}/generations/${generationId}/stop`),
    );
    expect(JSON.parse(all.at(-1)!.data)).toMatchObject({ message_id: generation.reply_message_id, stopped: true });
    const reply = await knex()("messages").where({ id: generation.reply_message_id }).first();
    expect(reply).toMatchObject({ stopped: true, content: contentOf(all), parent_id: generation.user_message_id });
    const edited = await knex()("messages").where({ id: generation.user_message_id }).first();
    expect(edited).toMatchObject({ role: "user", content: "And the red one?", parent_id: question.parent_id });
    const read = await (await ctx.b.fetch(`/v1/conversations/${conversation.id}`, { headers: ctx.alice.auth })).json();
    expect(read.active_message_id).toBe(reply.id);
    expect(await used(ctx.alice)).toBe(before + 1);
  });

  it("is 409 while a streamed send of the conversation is generating, storing nothing", async () => {
    const { conversation, first } = await exchange("regen while sending");
    ctx.fake.chat.next({ chunks: words(30), chunkDelayMs: 100 });
    let events: IdEvent[] = [];
    const reading = readIdEvents(await sendStream(ctx.a, ctx.alice, conversation.id, "keep talking"), (seen) => {
      events = [...seen];
      return false;
    });
    await eventually(async () => events.some((e) => e.event === "delta"));
    const count = async () => Number((await knex()("messages").where({ conversation_id: conversation.id }).count({ n: "*" }).first())?.n ?? 0);
    const before = await count();
    await expectError(await post(ctx.b, ctx.alice, `/v1/conversations/${conversation.id}/messages/${first.id}/regenerate`), 409, "conflict");
    await expectError(await editStream(ctx.alice, conversation.id, first.parent_id, "Something else"), 409, "conflict");
    expect(await count()).toBe(before);
    expect((await knex()("conversations").where({ id: conversation.id }).first()).reply_lease_until).toBeNull();
    await post(ctx.b, ctx.alice, `/v1/conversations/${conversation.id}/generations/${generationOf(events)}/stop`);
    await reading;
  });

  it("another user can neither resume nor stop a tree reply's generation (404)", async () => {
    const { conversation, first } = await exchange("regen private");
    ctx.fake.chat.next({ chunks: ["A", "B"] });
    const events = await readIdEvents(await regenerateStream(ctx.alice, conversation.id, first.id));
    const generationId = generationOf(events);
    await expectError(await resume(ctx.b, ctx.bob, conversation.id, generationId, "0"), 404, "not_found");
    await expectError(await post(ctx.b, ctx.bob, `/v1/conversations/${conversation.id}/generations/${generationId}/stop`), 404, "not_found");
  });
});
