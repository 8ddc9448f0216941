import { describe, expect, it } from "vitest";
import { createConversation, sendStream } from "../support/chat.ts";
import { generationOf, readIdEvents, useTwoProcesses } from "../support/generations.ts";
import { failQueries } from "../support/pg-queries.ts";
import { databaseKind } from "../support/service.ts";

// A streamed reply meets a database out of reach (a failover): the statements touching its
// generation fail for a moment as `pg` reports a cut connection. The stream ends with an `error`
// the client can act on (`service_unavailable`: send again), and the generation the client heard
// of in `start` is readable once the database is back, ended `failed`: its end waits out the
// outage rather than being dropped (test/scale/failover.e2e.test.ts meets the same on Patroni).
const ctx = useTwoProcesses();

const OUTAGE_MS = 800;

/** From the first statement that `matches`, every such statement fails for `OUTAGE_MS`. */
function outage(matches: RegExp): { stop: () => void; failed: () => number } {
  let first: number | undefined;
  let failed = 0;
  const stop = failQueries(
    (text) => {
      if (!matches.test(text)) return false;
      first ??= Date.now();
      return Date.now() - first < OUTAGE_MS;
    },
    () => {
      failed++;
      return new Error("Connection terminated unexpectedly");
    },
  );
  return { stop, failed: () => failed };
}

/** The events of a streamed send made while a cut holds; `lift` ends the cut once the stream has. */
async function streamWhile(lift: () => void, conversationId: string) {
  try {
    return await readIdEvents(await sendStream(ctx.a, ctx.alice, conversationId, "hi"));
  } finally {
    lift();
  }
}

/** The conversation's messages (its persona's greeting among them). */
const messagesOf = (conversationId: string) => ctx.a.services.db.knex("messages").where({ conversation_id: conversationId }).orderBy("id").select("id", "role");

const generation = async (conversationId: string, id: string) => {
  const { a, alice } = ctx;
  const response = await a.fetch(`/v1/conversations/${conversationId}/generations/${id}`, { headers: alice.auth });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

describe(`a streamed reply while the database is out of reach (${databaseKind})`, () => {
  it("whose user message could not be stored: error service_unavailable, and its generation is stored failed once the database is back", async () => {
    const { a, alice, persona, fake } = ctx;
    const conversation = await createConversation(a, alice, persona.id, "outage before");
    const before = await messagesOf(conversation.id);
    fake.chat.next({ chunks: ["Hello", " there"] });
    // The user message's statement carries the generation's row; the end's carries it again.
    const cut = outage(/\bgenerations\b/i);
    const events = await streamWhile(cut.stop, conversation.id);
    expect(cut.failed()).toBeGreaterThanOrEqual(2);
    expect(events[0]!.event).toBe("start");
    const end = events.at(-1)!;
    expect(end.event).toBe("error");
    expect(JSON.parse(end.data)).toEqual({ code: "service_unavailable", message: expect.any(String) });

    const read = await generation(conversation.id, generationOf(events));
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ status: "failed", user_message_id: null, reply_message_id: null, finished_at: expect.any(String) });
    // Nothing half-written: no message of the failed send.
    expect(await messagesOf(conversation.id)).toEqual(before);
    // A resume replays the end the stream sent.
    const resumed = await readIdEvents(await a.fetch(`/v1/conversations/${conversation.id}/generations/${generationOf(events)}/stream`, { headers: alice.auth }));
    expect(resumed.at(-1)).toMatchObject({ event: "error", id: end.id });
  });

  it("whose reply could not be stored: error service_unavailable, its user message kept, its generation ended failed once the database is back", async () => {
    const { a, alice, persona, fake } = ctx;
    const conversation = await createConversation(a, alice, persona.id, "outage after");
    const before = await messagesOf(conversation.id);
    fake.chat.next({ chunks: ["Hello", " there"] });
    // The reply's statement carries the generation's end; so does the end stored on its own.
    const cut = outage(/generation_state AS \(UPDATE generations/i);
    const events = await streamWhile(cut.stop, conversation.id);
    expect(cut.failed()).toBeGreaterThanOrEqual(2);
    const end = events.at(-1)!;
    expect(end.event).toBe("error");
    expect(JSON.parse(end.data)).toEqual({ code: "service_unavailable", message: expect.any(String) });

    const read = await generation(conversation.id, generationOf(events));
    expect(read.body).toMatchObject({ status: "failed", user_message_id: expect.any(String), reply_message_id: null });
    expect(await messagesOf(conversation.id)).toEqual([...before, { id: read.body.user_message_id, role: "user" }]);
  });

  it("whose user message committed but whose answer was lost: the generation it named is ended failed on its row", async () => {
    const { a, alice, persona, fake } = ctx;
    const conversation = await createConversation(a, alice, persona.id, "answer lost");
    fake.chat.next({ chunks: ["Hello", " there"] });
    let cut = 0;
    const stop = failQueries(
      (text) => /generation_row AS \(INSERT INTO generations/i.test(text) && cut++ === 0,
      () => new Error("Connection terminated unexpectedly"),
      { afterRunning: true },
    );
    const events = await streamWhile(stop, conversation.id);
    expect(cut).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(events.at(-1)!.data)).toEqual({ code: "service_unavailable", message: expect.any(String) });
    // Not left running until its lease runs out: its row, which did commit, says how it ended.
    const read = await generation(conversation.id, generationOf(events));
    expect(read.body).toMatchObject({ status: "failed", reply_message_id: null, finished_at: expect.any(String) });
  });
});
