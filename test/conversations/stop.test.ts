import { describe, expect, it } from "vitest";
import { createConversation, sendStream } from "../support/chat.ts";
import { eventually } from "../support/wait.ts";
import { contentOf, generationOf, readIdEvents, stopMidReply, useTwoProcesses } from "../support/generations.ts";
import { databaseKind, type TestService } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";

// Issue 21: a declared operation stops a generation from any process; the upstream call is
// aborted, and the partial reply is stored, marked stopped, as one message.
const ctx = useTwoProcesses();

const stop = (service: TestService, user: TestUser, conversationId: string, generationId: string) =>
  service.fetch(`/v1/conversations/${conversationId}/generations/${generationId}/stop`, { method: "POST", headers: user.auth });
const knex = () => ctx.a.services.db.knex;
const used = async (user: TestUser) => Number((await knex()("usage_counters").where({ user_id: user.id }).sum({ n: "messages_sent" }).first())?.n ?? 0);

describe(`stopping a generation (${databaseKind}: ${databaseKind === "postgres" ? "from another API process" : "one process"})`, () => {
  it("aborts the upstream call and stores the partial reply, marked stopped, as one message", async () => {
    const { a, b, alice, persona, fake } = ctx;
    const conversation = await createConversation(a, alice, persona.id, "stop me");
    const before = await used(alice);
    fake.chat.next({ chunks: Array.from({ length: 50 }, (_, i) => `w${i} `), chunkDelayMs: 200 });
    const response = await sendStream(a, alice, conversation.id, "talk forever");
    const { generation, events: all } = await stopMidReply(fake, response, (generationId) => stop(b, alice, conversation.id, generationId));
    expect(generation).toMatchObject({ finished_at: expect.any(String) });

    // The original stream ends with done, marked stopped, naming the stored partial reply.
    const done = all.at(-1)!;
    expect(done.event).toBe("done");
    expect(JSON.parse(done.data)).toMatchObject({ message_id: generation.reply_message_id, stopped: true, usage: { input_tokens: expect.any(Number), output_tokens: expect.any(Number) } });
    const reply = await knex()("messages").where({ id: generation.reply_message_id }).first();
    expect(reply).toMatchObject({ role: "assistant", stopped: true, content: contentOf(all) });
    expect(reply.content.length).toBeGreaterThan(0);
    expect(reply.content).not.toContain("w49");

    // Read through the API: one more user message and one stopped reply, counted once in the quota.
    const read = await (await b.fetch(`/v1/conversations/${conversation.id}`, { headers: alice.auth })).json();
    expect(read.message_count).toBe(2);
    expect(read.messages.at(-1)).toMatchObject({ id: reply.id, stopped: true, usage: { output_tokens: expect.any(Number) } });
    expect(read.messages[0].stopped).toBeUndefined();
    expect(await used(alice)).toBe(before + 1);
    // The message.created webhook event says it was stopped.
    const event = await knex()("event_outbox").where({ type: "message.created" }).whereRaw("data->>'message_id' = ?", [reply.id]).first();
    expect(event.data).toMatchObject({ role: "assistant", stopped: true, content: reply.content });
  });

  it("is a harmless 200 on a generation that has ended, answering its final state", async () => {
    const { a, b, alice, persona, fake } = ctx;
    const conversation = await createConversation(a, alice, persona.id, "ended");
    fake.chat.next({ chunks: ["all", " done"] });
    const events = await readIdEvents(await sendStream(a, alice, conversation.id, "quick"));
    const generationId = generationOf(events);
    const first = await stop(b, alice, conversation.id, generationId);
    expect(first.status).toBe(200);
    const body = await first.json();
    expect(body).toMatchObject({ id: generationId, status: "done", reply_message_id: JSON.parse(events.at(-1)!.data).message_id });
    expect(await (await stop(a, alice, conversation.id, generationId)).json()).toEqual(body);
    const reply = await knex()("messages").where({ id: body.reply_message_id }).first();
    expect(reply).toMatchObject({ content: "all done", stopped: false });
  });

  it("is 404 for another user's generation and leaves it running; 400 for a malformed id", async () => {
    const { a, b, alice, bob, persona, fake } = ctx;
    const conversation = await createConversation(a, alice, persona.id, "not yours");
    fake.chat.next({ chunks: Array.from({ length: 8 }, (_, i) => `w${i} `), chunkDelayMs: 100 });
    const reading = readIdEvents(await sendStream(a, alice, conversation.id, "mine"));
    const generationId = await eventually(async () => (await knex()("generations").where({ conversation_id: conversation.id }).first())?.id as string | undefined);
    const answer = await stop(b, bob, conversation.id, generationId);
    expect(answer.status).toBe(404);
    expect((await answer.json()).error.code).toBe("not_found");
    expect((await stop(b, alice, conversation.id, "nope")).status).toBe(400);
    const all = await reading;
    expect(JSON.parse(all.at(-1)!.data).stopped).toBeUndefined();
    expect(contentOf(all)).toBe(Array.from({ length: 8 }, (_, i) => `w${i} `).join(""));
  });
});
