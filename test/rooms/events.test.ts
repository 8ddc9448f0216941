import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deltaPayloads } from "../../server/areas/rooms/events.ts";
import { purgeOldRoomEvents } from "../../server/areas/rooms/jobs.ts";
import { ScriptedModel } from "../replies/fakes.ts";
import { expectError } from "../support/assertions.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, type TestUser } from "../support/users.ts";
import { readEvents, type EventReader, type ReadEvent } from "./event-reader.ts";
import { addMember, call, creator, makePersona, makeRoom, serviceEnv } from "./helpers.ts";

// Live room events on one service: what a member's stream carries and in which order, replay after
// Last-Event-ID, who may open it, when the service closes it, the replay window's purge, and the
// shutdown. Two API processes on one database have their own file (events-processes.e2e.test.ts).
let service: TestService;
let model: ScriptedModel;
let owner: TestUser;
let member: TestUser;
let outsider: TestUser;
const readers: EventReader[] = [];

beforeAll(async () => {
  model = new ScriptedModel();
  service = await startTestService({
    providers: { llm: model },
    // A long drain limit: stop() must not wait for open event streams (the last test shows it).
    env: { ...serviceEnv, STREAM_KEEPALIVE_MS: "200", SHUTDOWN_TIMEOUT_MS: "600000" },
  });
  [owner, member, outsider] = [await creator(service, "olga"), await creator(service, "mira"), await creator(service, "otto")];
});

afterAll(async () => {
  for (const reader of readers) reader.close();
  await service?.close();
});

async function open(user: { auth: Record<string, string> }, roomId: string, lastEventId?: string): Promise<EventReader> {
  const reader = await readEvents(service.url, roomId, user.auth, lastEventId);
  readers.push(reader);
  return reader;
}

const send = (user: TestUser, roomId: string, content: string) => call(service, user, "POST", `/v1/rooms/${roomId}/messages`, 201, { content });
const contents = (events: ReadEvent[]) => events.map((event) => event.data.content);

/** A room of the owner with the member in it, and personas by name. */
async function room(personaNames: string[] = [], fields: Record<string, unknown> = {}) {
  const personas = [];
  for (const name of personaNames) personas.push(await makePersona(service, owner, name));
  const created = await makeRoom(service, owner, { persona_ids: personas.map((p) => p.id), ...fields });
  await addMember(service, owner, created.id, member);
  return { id: created.id as string, personas };
}

describe("what a member's stream carries", () => {
  it("the message, the reply as it is written, then the stored reply, in order with increasing ids", async () => {
    const { id, personas } = await room(["Captain Nova"]);
    const [watching, sending] = [await open(member, id), await open(owner, id)];
    model.next({ chunks: ["That's ", "Venus", ", cadet!"] });
    const sent = await send(owner, id, "Which planet is low in the west?");
    for (const reader of [watching, sending]) await reader.until(() => reader.stored("message").length === 2, "both messages");

    const history = await call(service, member, "GET", `/v1/rooms/${id}/messages`, 200);
    const [reply, question] = history.data;
    const events = watching.events;
    // Only one persona replies, so every delta between the two messages is its reply being written.
    expect(events[0]).toEqual({ id: expect.stringMatching(/^[0-9]+$/), event: "message", data: question });
    expect(events.at(-1)).toEqual({ id: expect.stringMatching(/^[0-9]+$/), event: "message", data: reply });
    const deltas = events.slice(1, -1);
    expect(deltas.every((event) => event.event === "delta" && event.id === undefined)).toBe(true);
    expect(deltas.map((event) => event.data.content).join("")).toBe("That's Venus, cadet!");
    expect(deltas[0]!.data).toEqual({ persona_id: personas[0]!.id, persona_name: "Captain Nova", reply_to: sent.id, content: expect.any(String) });
    expect(BigInt(events.at(-1)!.id!)).toBeGreaterThan(BigInt(events[0]!.id!));
    // The sender's own stream is the same.
    expect(sending.events).toEqual(events);
  });

  it("members and personas coming and going", async () => {
    const { id } = await room();
    const reader = await open(owner, id);
    const persona = await makePersona(service, owner, "Quill");
    const joined = await call(service, owner, "POST", `/v1/rooms/${id}/members`, 200, { user_id: outsider.id });
    const added = await call(service, outsider, "POST", `/v1/rooms/${id}/personas`, 200, { persona_id: persona.id });
    await call(service, owner, "DELETE", `/v1/rooms/${id}/personas/${persona.id}`, 200);
    await call(service, outsider, "DELETE", `/v1/rooms/${id}/members/${outsider.id}`, 200);
    const events = await reader.until((received) => received.length === 4, "four events");
    expect(events.map(({ event, data }) => ({ event, data }))).toEqual([
      { event: "member_joined", data: { user_id: outsider.id, role: "member", joined_at: joined.joined_at } },
      { event: "persona_added", data: { persona_id: persona.id, name: "Quill", added_at: added.added_at } },
      { event: "persona_removed", data: { persona_id: persona.id, name: "Quill" } },
      { event: "member_left", data: { user_id: outsider.id } },
    ]);
    const ids = events.map((event) => BigInt(event.id!));
    expect([...ids].sort((a, b) => (a < b ? -1 : 1))).toEqual(ids);
    expect(new Set(ids).size).toBe(4);
  });

  it("a comment line keeps the connection open while nothing happens", async () => {
    const { id } = await room();
    const reader = await open(member, id);
    await reader.until(() => reader.comments.includes("keep-alive"), "a keep-alive comment");
    expect(reader.events).toEqual([]);
  });

  it("the reply's text whole, however long, with characters of every width", async () => {
    const { id } = await room(["Scribe"]);
    const reader = await open(member, id);
    // Well over PostgreSQL's 8000-byte notification payload.
    const long = "Ünïcødé 🚀 \"quoted\" \\ back\nslash ".repeat(600);
    model.next({ chunks: [long, "end."] });
    await send(member, id, "write a lot");
    await reader.until(() => reader.stored("message").length === 2, "both messages");
    expect(reader.events.filter((event) => event.event === "delta").map((event) => event.data.content).join("")).toBe(`${long}end.`);
    expect(reader.stored("message")[1]!.data.content).toBe(`${long}end.`);
  });

  it("two members posting at once: every stream sees every message once, in the same order", async () => {
    const { id } = await room();
    const [a, b] = [await open(owner, id), await open(member, id)];
    await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => send(owner, id, `owner ${i}`)),
      ...Array.from({ length: 6 }, (_, i) => send(member, id, `member ${i}`)),
    ]);
    for (const reader of [a, b]) await reader.until(() => reader.stored("message").length === 12, "twelve messages");
    expect(b.events).toEqual(a.events);
    const ids = a.events.map((event) => BigInt(event.id!));
    expect(ids.every((value, i) => i === 0 || value > ids[i - 1]!)).toBe(true);
    const history = await call(service, owner, "GET", `/v1/rooms/${id}/messages?limit=50`, 200);
    expect(new Set(a.events.map((event) => event.data.id))).toEqual(new Set(history.data.map((m: { id: string }) => m.id)));
  });
});

describe("replay after Last-Event-ID", () => {
  it("sends what was missed, in order, then what follows, and nothing twice", async () => {
    const { id } = await room();
    const first = await open(member, id);
    await send(owner, id, "one");
    await first.until(() => first.events.length === 1, "the first message");
    first.close();
    await send(owner, id, "two");
    await send(member, id, "three");
    const again = await open(member, id, first.events[0]!.id);
    await again.until(() => again.events.length === 2, "the missed messages");
    await send(owner, id, "four");
    await again.until(() => again.events.length === 3, "the next message");
    expect(contents(again.events)).toEqual(["two", "three", "four"]);
    expect(again.events.every((event) => event.event === "message")).toBe(true);

    // Without Last-Event-ID the stream starts with what happens next; with 0, with everything kept.
    const fresh = await open(member, id);
    const all = await open(member, id, "0");
    await send(owner, id, "five");
    await fresh.until(() => fresh.events.length === 1, "the live message");
    await all.until(() => all.events.length === 6, "every event");
    expect(contents(fresh.events)).toEqual(["five"]);
    expect(all.events[0]!.event).toBe("member_joined");
    expect(contents(all.stored("message"))).toEqual(["one", "two", "three", "four", "five"]);
  });

  it("keeps events for the replay window only", async () => {
    const { id } = await room();
    await send(owner, id, "kept a day");
    const later = (hours: number) => ({ ...service.services, now: () => new Date(Date.now() + hours * 3_600_000) });
    await purgeOldRoomEvents(later(23));
    const kept = await open(member, id, "0");
    await kept.until(() => kept.stored("message").length === 1, "the kept message");
    expect(contents(kept.stored("message"))).toEqual(["kept a day"]);
    expect(await purgeOldRoomEvents(later(25))).toBeGreaterThan(0);
    const { knex } = service.services.db;
    expect(await knex("room_events").where({ room_id: id }).count({ n: "*" }).first()).toEqual({ n: 0 });
    // The messages themselves stay.
    expect((await call(service, member, "GET", `/v1/rooms/${id}/messages`, 200)).total).toBe(1);
  });
});

describe("who may open a room's stream", () => {
  it("members only: 404 for a private room, 403 for a public one, 404 for unknown ids, 400 for malformed ones", async () => {
    const { id: hidden } = await room();
    const { id: open_ } = await room([], { is_public: true });
    const get = (user: { auth: Record<string, string> }, path: string, headers: Record<string, string> = {}) => service.fetch(path, { headers: { ...user.auth, ...headers } });
    await expectError(await get(outsider, `/v1/rooms/${hidden}/events`), 404, "not_found");
    await expectError(await get(outsider, `/v1/rooms/${open_}/events`), 403, "forbidden");
    await expectError(await get(member, "/v1/rooms/0193a6d2-4c5e-7f10-8a2b-3c4d5e6f7a99/events"), 404, "not_found");
    await expectError(await get(member, "/v1/rooms/not-a-room/events"), 400, "invalid_request");
    await expectError(await service.fetch(`/v1/rooms/${hidden}/events`), 401, "unauthorized");
    await expectError(await get({ auth: { "x-api-key": await apiKeyFor(service, member, ["personas:read"]) } }, `/v1/rooms/${hidden}/events`), 403, "forbidden");
    const body = await expectError(await get(member, `/v1/rooms/${hidden}/events`, { "last-event-id": "12abc" }), 400, "invalid_request");
    expect(JSON.stringify(body.error.details)).toContain("last-event-id");
    await expectError(await get(member, `/v1/rooms/${hidden}/events`, { "last-event-id": "1".repeat(19) }), 400, "invalid_request");
    const reader = await open({ auth: { "x-api-key": await apiKeyFor(service, member, ["conversations:read"]) } }, hidden);
    expect(reader.status).toBe(200);
  });

  it("closes the stream of a removed member, saying why; the others' stay open", async () => {
    const { id } = await room();
    const [removed, staying] = [await open(member, id), await open(owner, id)];
    await call(service, owner, "DELETE", `/v1/rooms/${id}/members/${member.id}`, 200);
    await removed.ended;
    expect(removed.events.map(({ event, data }) => ({ event, data }))).toEqual([
      { event: "member_left", data: { user_id: member.id } },
      { event: "closed", data: { reason: "removed" } },
    ]);
    await send(owner, id, "still here");
    await staying.until(() => staying.events.length === 2, "the owner's next message");
    expect(staying.events.map((event) => event.event)).toEqual(["member_left", "message"]);
    await expectError(await service.fetch(`/v1/rooms/${id}/events`, { headers: member.auth }), 404, "not_found");
  });

  it("closes every stream of a deleted room", async () => {
    const { id } = await room();
    const readers_ = [await open(member, id), await open(owner, id)];
    await call(service, owner, "DELETE", `/v1/rooms/${id}`, 200);
    for (const reader of readers_) {
      await reader.ended;
      expect(reader.events).toEqual([{ id: undefined, event: "closed", data: { reason: "room_deleted" } }]);
    }
  });
});

describe("delta notifications", () => {
  it("cut a long delta into payloads under PostgreSQL's limit that concatenate to it", () => {
    const roomId = "0193a6d2-4c5e-7f10-8a2b-3c4d5e6f7a01";
    const base = { persona_id: "0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01", persona_name: "Nova \"the\" Captain", reply_to: "0193a6e0-5a1b-7c3d-8e4f-1a2b3c4d5e01" };
    const content = "a\u0001é🚀\"\\".repeat(3000);
    const payloads = deltaPayloads(roomId, { ...base, content });
    expect(payloads.length).toBeGreaterThan(1);
    for (const payload of payloads) expect(Buffer.byteLength(payload)).toBeLessThan(8000);
    const parsed = payloads.map((payload) => JSON.parse(payload.slice(`${roomId}:delta:`.length)));
    expect(parsed.map((delta) => delta.content).join("")).toBe(content);
    expect(parsed.every((delta) => delta.persona_name === base.persona_name)).toBe(true);
    expect(deltaPayloads(roomId, { ...base, content: "short" })).toHaveLength(1);
  });
});

describe.runIf(databaseKind === "postgres")("a lost notification connection", () => {
  it("loses nothing: the hub reads the table again once it listens again", async () => {
    const { id } = await room();
    const reader = await open(member, id);
    const { knex } = service.services.db;
    await knex.raw("select pg_terminate_backend(pid) from pg_stat_activity where query like 'LISTEN %' and datname = current_database() and pid <> pg_backend_pid()");
    await send(owner, id, "while the listener was away");
    await reader.until(() => reader.events.length === 1, "the message sent while the listener reconnected");
    expect(contents(reader.events)).toEqual(["while the listener was away"]);
  });
});

describe("shutdown", () => {
  it("ends every open event stream so that stop() need not wait for them", async () => {
    const { id } = await room();
    const reader = await open(member, id);
    await service.stop();
    await reader.ended;
    // The stream ended without `closed`: the client is free to reconnect elsewhere.
    expect(reader.events).toEqual([]);
  });
});
