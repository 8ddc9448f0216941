import { afterEach, describe, expect, it } from "vitest";
import { createConversation, sendStream } from "../support/chat.ts";
import { contentOf, generationOf, readIdEvents, useTwoProcesses } from "../support/generations.ts";
import { statementsNaming } from "../support/pg-queries.ts";
import { databaseKind } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";

// Issue 37: a streamed send stores everything it stored before (the user message, the reply, usage,
// the generation's events for resume, the quota's lease, outbox events) in three statements: the
// turn (conversation, persona, history, card, quota reservation), the user message carrying the
// generation's row, and the reply carrying the generation's last events, its end, the lease's end
// and the announcement. Counted by what names the conversation, so nothing else the service runs
// meanwhile is counted.
const ctx = useTwoProcesses();
const knex = () => ctx.a.services.db.knex;
const used = async (user: TestUser) => Number((await knex()("usage_counters").where({ user_id: user.id }).sum({ n: "messages_sent" }).first())?.n ?? 0);

let stopWatching: (() => void) | undefined;
afterEach(async () => {
  stopWatching?.();
  await knex().raw("DROP TRIGGER IF EXISTS refuse_reply ON messages");
  await knex().raw("DROP FUNCTION IF EXISTS refuse_reply()");
});

describe(`a streamed send's statements (${databaseKind})`, () => {
  it("are three: the turn, the user message with the generation's row, the reply with its end", async () => {
    const { a, alice, persona, fake } = ctx;
    const conversation = await createConversation(a, alice, persona.id, "three statements");
    fake.chat.next({ chunks: ["warm", " up"] });
    await readIdEvents(await sendStream(a, alice, conversation.id, "first"));
    const before = await used(alice);
    const watch = statementsNaming([conversation.id]);
    stopWatching = watch.stop;
    const seen = watch.texts;
    fake.chat.next({ chunks: ["one", " two", " three"] });
    const events = await readIdEvents(await sendStream(a, alice, conversation.id, "second"));
    expect(events.at(-1)!.event).toBe("done");
    expect(seen).toHaveLength(3);
    expect(seen[0]).toMatch(/^WITH RECURSIVE c AS/);
    expect(seen[1]).toMatch(/^WITH generation_row AS \(INSERT INTO generations/);
    expect(seen[1]).toContain("INSERT INTO messages");
    expect(seen[2]).toMatch(/^WITH settled_leases AS \(DELETE FROM quota_leases/);
    expect(seen[2]).toContain("generation_events_end AS (INSERT INTO generation_events");
    expect(seen[2]).toContain("INSERT INTO messages");
    expect(seen[2]).toContain("generation_state AS (UPDATE generations");

    // Everything is stored as before: the generation's events and end, the reply, the quota.
    const generationId = generationOf(events);
    const generation = await knex()("generations").where({ id: generationId }).first();
    const { message_id: replyId } = JSON.parse(events.at(-1)!.data) as { message_id: string };
    expect(generation).toMatchObject({ status: "done", reply_message_id: replyId, finished_at: expect.any(Date) });
    const stored = await knex()("generation_events").where({ generation_id: generationId }).orderBy("seq").select("seq", "event");
    expect(stored.map((event) => event.event)).toEqual(events.map((event) => event.event));
    expect((await knex()("messages").where({ id: replyId }).first()).content).toBe("one two three");
    expect(await knex()("quota_leases").where({ reply_id: replyId }).first()).toBeUndefined();
    expect(await used(alice)).toBe(before + 1);
  });

  it("when the reply's statement fails, store nothing of it, and still end the generation with its deltas and give the quota back", async () => {
    const { a, alice, persona, fake } = ctx;
    const conversation = await createConversation(a, alice, persona.id, "failing reply");
    await knex().raw(`CREATE FUNCTION refuse_reply() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'refused for the test'; END $$`);
    await knex().raw(`CREATE TRIGGER refuse_reply BEFORE INSERT ON messages FOR EACH ROW
      WHEN (NEW.role = 'assistant' AND NEW.content LIKE '%refuse me%') EXECUTE FUNCTION refuse_reply()`);
    const before = await used(alice);
    fake.chat.next({ chunks: ["please", " refuse me"] });
    const events = await readIdEvents(await sendStream(a, alice, conversation.id, "go"));
    expect(events.at(-1)!.event).toBe("error");
    expect(contentOf(events)).toBe("please refuse me");
    const generationId = generationOf(events);
    const generation = await knex()("generations").where({ id: generationId }).first();
    expect(generation).toMatchObject({ status: "failed", reply_message_id: null, finished_at: expect.any(Date) });
    // The deltas the reply's statement would have carried are stored with the end, for a resume.
    const stored = await knex()("generation_events").where({ generation_id: generationId }).orderBy("seq").select("event");
    expect(stored.map((event) => event.event)).toEqual(events.map((event) => event.event));
    // The user message stays (the generation's row came with it); no reply; the quota is given back.
    const messages = await knex()("messages").where({ conversation_id: conversation.id }).orderBy("depth").select("role", "content");
    expect(messages.map((message) => message.role)).toEqual(["assistant", "user"]);
    expect(await used(alice)).toBe(before);
    expect(await knex()("quota_leases").where({ user_id: alice.id }).first()).toBeUndefined();
  });
});
