import knexOf from "knex";
import { describe, expect, it } from "vitest";
import { purgeGenerationDeltas } from "../../server/areas/conversations/generations/store.ts";
import { createConversation, createPersona, sendStream } from "../support/chat.ts";
import { eventually } from "../support/wait.ts";
import { contentOf, generationOf, readIdEvents, useTwoProcesses, type IdEvent } from "../support/generations.ts";
import { onEveryQuery } from "../support/pg-queries.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// Issue 21: a streamed reply is a generation that outlives its connection. Every event has an id;
// a resume with Last-Event-ID on another API process replays what was missed and follows live.
const ctx = useTwoProcesses();

const resume = (service: TestService, user: TestUser, conversationId: string, generationId: string, lastEventId?: string) =>
  service.fetch(`/v1/conversations/${conversationId}/generations/${generationId}/stream`, {
    headers: { ...user.auth, ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId }) },
  });
// Stored data comes back from jsonb with its keys reordered: compare events as parsed.
const parsed = (events: IdEvent[]) => events.map((e) => ({ ...e, data: JSON.parse(e.data) as unknown }));
const slowChunks = (n: number, delayMs = 150) => ({ chunks: Array.from({ length: n }, (_, i) => `w${i} `), chunkDelayMs: delayMs });
const fullReply = (n: number) => Array.from({ length: n }, (_, i) => `w${i} `).join("");

describe(`a streamed reply's events (${databaseKind})`, () => {
  it("carry ids 1, 2, 3, ...; start names the generation, which ends done with the reply", async () => {
    const { a, alice, persona, fake } = ctx;
    const conversation = await createConversation(a, alice, persona.id, "resume");
    fake.chat.next({ chunks: ["Hello", " there"] });
    const events = await readIdEvents(await sendStream(a, alice, conversation.id, "hi"));
    expect(events.map((e) => [e.id, e.event])).toEqual([["1", "start"], ["2", "delta"], ["3", "delta"], ["4", "done"]]);
    const done = JSON.parse(events[3]!.data);
    const generation = await (await a.fetch(`/v1/conversations/${conversation.id}/generations/${generationOf(events)}`, { headers: alice.auth })).json();
    expect(generation).toEqual({
      id: generationOf(events), conversation_id: conversation.id, status: "done", user_message_id: expect.any(String),
      reply_message_id: done.message_id, started_at: expect.any(String), finished_at: expect.any(String),
    });
  });
});

describe(`resuming (${databaseKind}: ${databaseKind === "postgres" ? "two API processes" : "one process"})`, () => {
  it("after a drop, replays the missed events on another process and follows live to done", async () => {
    const { a, b, alice, persona, fake } = ctx;
    const conversation = await createConversation(a, alice, persona.id, "resume");
    fake.chat.next(slowChunks(12));
    const first = await readIdEvents(await sendStream(a, alice, conversation.id, "talk"), (events) => events.filter((e) => e.event === "delta").length >= 3);
    const generationId = generationOf(first);
    const response = await resume(b, alice, conversation.id, generationId, first.at(-1)!.id);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const rest = await readIdEvents(response);
    const ids = [...first, ...rest].map((e) => Number(e.id));
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
    expect(rest.at(-1)!.event).toBe("done");
    expect(contentOf(first) + contentOf(rest)).toBe(fullReply(12));
    const reply = await eventually(() => a.services.db.knex("messages").where({ id: JSON.parse(rest.at(-1)!.data).message_id }).first());
    expect(reply.content).toBe(fullReply(12));
  });

  it("stores the reply of a client that never comes back", async () => {
    const { a, alice, persona, fake } = ctx;
    const conversation = await createConversation(a, alice, persona.id, "resume");
    fake.chat.next(slowChunks(5, 50));
    const first = await readIdEvents(await sendStream(a, alice, conversation.id, "bye"), (events) => events.length >= 1);
    const row = await eventually(() => a.services.db.knex("generations").where({ id: generationOf(first), status: "done" }).first());
    const reply = await a.services.db.knex("messages").where({ id: row.reply_message_id }).first();
    expect(reply).toMatchObject({ role: "assistant", content: fullReply(5), stopped: false });
  });

  it("of a finished generation replays to done and ends, from the start or from an id", async () => {
    const { a, b, alice, persona, fake } = ctx;
    const conversation = await createConversation(a, alice, persona.id, "resume");
    fake.chat.next({ chunks: ["A", "B", "C"] });
    const original = await readIdEvents(await sendStream(a, alice, conversation.id, "abc"));
    const generationId = generationOf(original);
    const all = await readIdEvents(await resume(b, alice, conversation.id, generationId));
    expect(parsed(all)).toEqual(parsed(original));
    const tail = await readIdEvents(await resume(b, alice, conversation.id, generationId, "2"));
    expect(parsed(tail)).toEqual(parsed(original.slice(2)));
    expect(await readIdEvents(await resume(b, alice, conversation.id, generationId, "99"))).toEqual([]);
  });

  it("an hour after the end: the deltas are purged, the reply comes as one delta, the end stays", async () => {
    const { a, b, alice, persona, fake } = ctx;
    const conversation = await createConversation(a, alice, persona.id, "resume");
    fake.chat.next({ chunks: ["A", "B", "C"] });
    const original = await readIdEvents(await sendStream(a, alice, conversation.id, "abc"));
    const generationId = generationOf(original);
    const { knex } = a.services.db;
    await knex("generations").where({ id: generationId }).update({ finished_at: new Date(Date.now() - 2 * 3600_000) });
    await purgeGenerationDeltas(knex, new Date(Date.now() - 3600_000));
    expect((await knex("generation_events").where({ generation_id: generationId })).map((e) => e.event)).toEqual(["done"]);
    const all = await readIdEvents(await resume(b, alice, conversation.id, generationId));
    expect(all.map((e) => [e.id, e.event])).toEqual([["1", "start"], ["4", "delta"], ["5", "done"]]);
    expect(contentOf(all)).toBe("ABC");
    expect(parsed(all).at(-1)).toEqual(parsed(original).at(-1));
  });

  it("follows a running generation from its start when a send is retried with its Idempotency-Key", async () => {
    const { a, b, alice, persona, fake } = ctx;
    const conversation = await createConversation(a, alice, persona.id, "resume");
    const headers = { "idempotency-key": `resume-${conversation.id}` };
    fake.chat.next(slowChunks(8, 100));
    const first = await readIdEvents(await sendStream(a, alice, conversation.id, "once", { headers }), (events) => events.length >= 2);
    const retry = await sendStream(b, alice, conversation.id, "once", { headers });
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    const events = await readIdEvents(retry);
    expect(generationOf(events)).toBe(generationOf(first));
    expect(contentOf(events)).toBe(fullReply(8));
    expect(fake.requests.filter((r) => r.path === "/v1/chat/completions")).toHaveLength(1);
    // One exchange after the greeting (depth 0).
    const count = Number((await a.services.db.knex("messages").where({ conversation_id: conversation.id }).where("depth", ">", 0).count({ n: "*" }).first())!.n);
    expect(count).toBe(2);
  });
});

describe(`resume: bad input and access (${databaseKind})`, () => {
  it("is 404 for another user's generation, an unknown one, or one of another conversation", async () => {
    const { a, alice, bob, persona, fake } = ctx;
    const conversation = await createConversation(a, alice, persona.id, "resume");
    const other = await createConversation(a, alice, persona.id, "resume");
    fake.chat.next({ chunks: ["x"] });
    const generationId = generationOf(await readIdEvents(await sendStream(a, alice, conversation.id, "x")));
    for (const [user, conversationId, id] of [[bob, conversation.id, generationId], [alice, conversation.id, "0193a6f1-2b2c-7d3e-9f4a-5b6c7d8e9f99"], [alice, other.id, generationId]] as const) {
      const streamed = await resume(a, user, conversationId, id);
      expect(streamed.status).toBe(404);
      expect((await streamed.json()).error.code).toBe("not_found");
      const read = await a.fetch(`/v1/conversations/${conversationId}/generations/${id}`, { headers: user.auth });
      expect(read.status).toBe(404);
    }
  });

  it("is 400 for a malformed id or Last-Event-ID, and 401 without credentials", async () => {
    const { a, alice, persona } = ctx;
    const conversation = await createConversation(a, alice, persona.id, "resume");
    expect((await resume(a, alice, conversation.id, "not-a-uuid")).status).toBe(400);
    const generationId = "0193a6f1-2b2c-7d3e-9f4a-5b6c7d8e9f99";
    for (const bad of ["abc", "-1", "1.5", "12345678901"]) {
      const response = await resume(a, alice, conversation.id, generationId, bad);
      expect(response.status, bad).toBe(400);
      expect((await response.json()).error.code).toBe("invalid_request");
    }
    expect((await a.fetch(`/v1/conversations/${conversation.id}/generations/${generationId}/stream`)).status).toBe(401);
  });
});

describe(`shutdown (${databaseKind})`, () => {
  it("waits for a running generation whose client has gone: its reply is stored before the database closes", async () => {
    const { fake } = ctx;
    const service = await startTestService({ fresh: true, env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test-secret", LLM_MAX_RETRIES: "0" } });
    const user = await registerUser(service);
    const persona = await createPersona(service, user);
    const conversation = await createConversation(service, user, persona.id, "shutdown");
    fake.chat.next(slowChunks(6, 100));
    const first = await readIdEvents(await sendStream(service, user, conversation.id, "bye"), (events) => events.length >= 2);
    const stored: string[] = [];
    // The last write of the generation: its end, recorded before the database closes.
    const stopWatching = onEveryQuery((_client, text) => {
      if (/generation_events/i.test(text) && /\bupdate generations\b/i.test(text)) stored.push("end");
    });
    await service.stop();
    stopWatching();
    expect(stored).toEqual(["end"]);
    expect(fake.requests.filter((r) => r.path === "/v1/chat/completions" && r.aborted)).toEqual([]);
    if (databaseKind === "postgres") {
      const reader = knexOf({ client: "pg", connection: service.database.url! });
      const row = await reader("generations").where({ id: generationOf(first) }).first();
      const reply = await reader("messages").where({ id: row.reply_message_id }).first();
      await reader.destroy();
      expect(row.status).toBe("done");
      expect(reply.content).toBe(fullReply(6));
    }
    await service.close();
  });
});
