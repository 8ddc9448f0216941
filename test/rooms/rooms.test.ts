import { randomUUID } from "node:crypto";
import { archiveOf, purgeDeletedAccounts } from "../support/account-data.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nonCascadingUserReferences } from "../../server/areas/auth/users/store.ts";
import { ScriptedModel } from "../replies/fakes.ts";
import { expectError } from "../support/assertions.ts";
import { jsonHeaders, startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, type TestUser } from "../support/users.ts";
import { addMember, call, creator, makePersona, makeRoom, serviceEnv } from "./helpers.ts";

// Rooms, members and personas: who may see and change what, every limit of the contract, history
// paging, and the account's export and purge. Replies have their own file.
let service: TestService;
let clock = new Date();
const tick = (ms = 1000) => (clock = new Date(clock.getTime() + ms));
const DAY_MS = 24 * 60 * 60 * 1000;
let owner: TestUser;
let member: TestUser;
let outsider: TestUser;

const raw = (user: TestUser, method: string, path: string, body?: unknown) =>
  service.fetch(path, { method, headers: { ...user.auth, ...(body === undefined ? {} : jsonHeaders) }, body: body === undefined ? undefined : JSON.stringify(body) });

beforeAll(async () => {
  service = await startTestService({ now: () => clock, providers: { llm: new ScriptedModel() }, env: serviceEnv });
  [owner, member, outsider] = [await creator(service, "olga"), await creator(service, "mira"), await creator(service, "otto")];
});

afterAll(async () => {
  await service?.close();
});

describe("creating and reading rooms", () => {
  it("creates a room with the caller as owner and only member, and its personas in the order given", async () => {
    const own = await makePersona(service, owner, "Captain Nova", { is_public: false });
    const shared = await makePersona(service, outsider, "Doctor Quill");
    const at = tick();
    const room = await makeRoom(service, owner, { name: "Stargazers' Club", description: "Friday nights.", persona_ids: [shared.id, own.id] });
    expect(room).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: "Stargazers' Club",
      description: "Friday nights.",
      owner_id: owner.id,
      is_public: false,
      reply_mode: "natural",
      members: [{ user_id: owner.id, role: "owner", joined_at: at.toISOString() }],
      personas: [
        { persona_id: shared.id, name: "Doctor Quill", added_at: at.toISOString() },
        { persona_id: own.id, name: "Captain Nova", added_at: at.toISOString() },
      ],
      created_at: at.toISOString(),
      updated_at: at.toISOString(),
    });
    expect(await call(service, owner, "GET", `/v1/rooms/${room.id}`, 200)).toEqual(room);
  });

  it("fills in the defaults", async () => {
    const room = await makeRoom(service, owner, { name: "x" });
    expect(room).toMatchObject({ name: "x", description: "", is_public: false, personas: [] });
  });

  it("refuses another user's private persona with 404 and creates nothing", async () => {
    const hidden = await makePersona(service, outsider, "Hidden", { is_public: false });
    const before = await service.services.db.knex("rooms").count({ n: "*" }).first();
    await expectError(await raw(owner, "POST", "/v1/rooms", { name: "no", persona_ids: [hidden.id] }), 404, "not_found");
    await expectError(await raw(owner, "POST", "/v1/rooms", { name: "no", persona_ids: [randomUUID()] }), 404, "not_found");
    expect(await service.services.db.knex("rooms").count({ n: "*" }).first()).toEqual(before);
  });

  it("refuses a public persona of a deleted account with 404", async () => {
    const leaving = await creator(service);
    const persona = await makePersona(service, leaving, "Ghost");
    await service.fetch("/v1/auth/me", { method: "DELETE", headers: leaving.auth });
    await expectError(await raw(owner, "POST", "/v1/rooms", { name: "no", persona_ids: [persona.id] }), 404, "not_found");
  });

  it("checks every limit of the body", async () => {
    const persona = await makePersona(service, owner, "Limit");
    await makeRoom(service, owner, { name: "n".repeat(100), description: "d".repeat(500) });
    for (const body of [
      { name: "" },
      { name: "n".repeat(101) },
      { name: "ok", description: "d".repeat(501) },
      { name: "ok", persona_ids: [persona.id, persona.id] },
      { name: "ok", persona_ids: Array.from({ length: 11 }, () => randomUUID()) },
      { name: "ok", persona_ids: ["not-a-uuid"] },
      { name: "ok", is_public: "yes" },
      { name: "ok", reply_mode: "loudest" },
      { description: "no name" },
    ]) {
      await expectError(await raw(owner, "POST", "/v1/rooms", body), 400, "invalid_request");
    }
  });

  it("answers 404 for unknown ids and 400 for malformed ones", async () => {
    await expectError(await raw(owner, "GET", `/v1/rooms/${randomUUID()}`), 404, "not_found");
    await expectError(await raw(owner, "GET", `/v1/rooms/${randomUUID()}/messages`), 404, "not_found");
    await expectError(await raw(owner, "GET", "/v1/rooms/nope"), 400, "invalid_request");
    await expectError(await raw(owner, "GET", `/v1/rooms/nope/messages`), 400, "invalid_request");
  });

  it("hides a private room from outsiders (404 on every operation) and shows a public one read-only (403 on writes)", async () => {
    const hidden = await makeRoom(service, owner, { name: "Private" });
    const open = await makeRoom(service, owner, { name: "Public", is_public: true });
    const persona = await makePersona(service, outsider, "Outsider's");
    const requests: [string, string, unknown?][] = [
      ["GET", ""],
      ["PUT", "", { name: "mine" }],
      ["DELETE", ""],
      ["GET", "/messages"],
      ["POST", "/messages", { content: "hi" }],
      ["POST", "/members", { user_id: outsider.id }],
      ["DELETE", `/members/${owner.id}`],
      ["POST", "/personas", { persona_id: persona.id }],
      ["DELETE", `/personas/${persona.id}`],
    ];
    for (const [method, path, body] of requests) {
      await expectError(await raw(outsider, method, `/v1/rooms/${hidden.id}${path}`, body), 404, "not_found");
    }
    expect((await call(service, outsider, "GET", `/v1/rooms/${open.id}`, 200)).name).toBe("Public");
    await call(service, outsider, "GET", `/v1/rooms/${open.id}/messages`, 200);
    for (const [method, path, body] of requests.filter(([method]) => method !== "GET")) {
      await expectError(await raw(outsider, method, `/v1/rooms/${open.id}${path}`, body), 403, "forbidden");
    }
    // An onlooker leaving a room it is not in: there is no such member.
    await expectError(await raw(outsider, "DELETE", `/v1/rooms/${open.id}/members/${outsider.id}`), 404, "not_found");
  });

  it("needs the conversations scopes", async () => {
    const key = await apiKeyFor(service, owner, ["personas:read"]);
    const response = await service.fetch("/v1/rooms", { headers: { "x-api-key": key } });
    await expectError(response, 403, "forbidden");
    expect((await service.fetch("/v1/rooms")).status).toBe(401);
  });
});

describe("updating and deleting", () => {
  it("lets the owner change the supplied fields only", async () => {
    const room = await makeRoom(service, owner, { name: "Before", description: "keep" });
    const at = tick();
    const updated = await call(service, owner, "PUT", `/v1/rooms/${room.id}`, 200, { name: "After", is_public: true });
    expect(updated).toEqual({
      id: room.id,
      name: "After",
      description: "keep",
      owner_id: owner.id,
      is_public: true,
      reply_mode: "natural",
      created_at: room.created_at,
      updated_at: at.toISOString(),
    });
    await expectError(await raw(owner, "PUT", `/v1/rooms/${room.id}`, { name: "" }), 400, "invalid_request");
    await expectError(await raw(owner, "PUT", `/v1/rooms/${room.id}`, { description: "d".repeat(501) }), 400, "invalid_request");
    await expectError(await raw(owner, "PUT", `/v1/rooms/${room.id}`, { reply_mode: "random" }), 400, "invalid_request");
    expect((await call(service, owner, "GET", `/v1/rooms/${room.id}`, 200)).name).toBe("After");
  });

  it("refuses a member's update and delete with 403", async () => {
    const room = await makeRoom(service, owner);
    await addMember(service, owner, room.id, member);
    await expectError(await raw(member, "PUT", `/v1/rooms/${room.id}`, { name: "mine" }), 403, "forbidden");
    await expectError(await raw(member, "DELETE", `/v1/rooms/${room.id}`), 403, "forbidden");
  });

  it("deletes the room with its messages", async () => {
    const room = await makeRoom(service, owner);
    await call(service, owner, "POST", `/v1/rooms/${room.id}/messages`, 201, { content: "bye" });
    expect(await call(service, owner, "DELETE", `/v1/rooms/${room.id}`, 200)).toEqual({ id: room.id, deleted: true });
    await expectError(await raw(owner, "GET", `/v1/rooms/${room.id}`), 404, "not_found");
    expect(await service.services.db.knex("room_messages").where({ room_id: room.id })).toEqual([]);
  });
});

describe("members", () => {
  it("lets the owner add and remove members, and a member leave", async () => {
    const room = await makeRoom(service, owner);
    const at = tick();
    expect(await addMember(service, owner, room.id, member)).toEqual({ room_id: room.id, user_id: member.id, role: "member", joined_at: at.toISOString() });
    const other = await creator(service);
    await addMember(service, owner, room.id, other);
    expect((await call(service, member, "GET", `/v1/rooms/${room.id}`, 200)).members.map((m: { user_id: string; role: string }) => [m.user_id, m.role])).toEqual([
      [owner.id, "owner"],
      [member.id, "member"],
      [other.id, "member"],
    ]);
    await expectError(await raw(owner, "POST", `/v1/rooms/${room.id}/members`, { user_id: member.id }), 409, "conflict");
    await expectError(await raw(member, "POST", `/v1/rooms/${room.id}/members`, { user_id: outsider.id }), 403, "forbidden");
    await expectError(await raw(member, "DELETE", `/v1/rooms/${room.id}/members/${other.id}`), 403, "forbidden");
    await expectError(await raw(member, "DELETE", `/v1/rooms/${room.id}/members/${owner.id}`), 403, "forbidden");
    await expectError(await raw(owner, "DELETE", `/v1/rooms/${room.id}/members/${owner.id}`), 409, "conflict");
    expect(await call(service, owner, "DELETE", `/v1/rooms/${room.id}/members/${other.id}`, 200)).toEqual({ deleted: true, room_id: room.id, user_id: other.id });
    expect(await call(service, member, "DELETE", `/v1/rooms/${room.id}/members/${member.id}`, 200)).toEqual({ deleted: true, room_id: room.id, user_id: member.id });
    // Gone: the private room is hidden again.
    await expectError(await raw(member, "GET", `/v1/rooms/${room.id}`), 404, "not_found");
    await expectError(await raw(owner, "DELETE", `/v1/rooms/${room.id}/members/${member.id}`), 404, "not_found");
  });

  it("answers 404 for an unknown or deleted user and 400 for a bad body or a malformed user id", async () => {
    const room = await makeRoom(service, owner);
    await expectError(await raw(owner, "POST", `/v1/rooms/${room.id}/members`, { user_id: randomUUID() }), 404, "not_found");
    await expectError(await raw(owner, "POST", `/v1/rooms/${room.id}/members`, { user_id: "someone" }), 400, "invalid_request");
    const leaving = await creator(service);
    await service.fetch("/v1/auth/me", { method: "DELETE", headers: leaving.auth });
    await expectError(await raw(owner, "POST", `/v1/rooms/${room.id}/members`, { user_id: leaving.id }), 404, "not_found");
    await expectError(await raw(owner, "POST", `/v1/rooms/${room.id}/members`, { user_id: "" }), 400, "invalid_request");
    await expectError(await raw(owner, "POST", `/v1/rooms/${room.id}/members`, { user_id: "u".repeat(65) }), 400, "invalid_request");
    await expectError(await raw(owner, "POST", `/v1/rooms/${room.id}/members`, {}), 400, "invalid_request");
  });
});

describe("personas in a room", () => {
  it("lets a member add its own or a public persona, not another user's private one", async () => {
    const room = await makeRoom(service, owner);
    await addMember(service, owner, room.id, member);
    const own = await makePersona(service, member, "Mira's", { is_public: false });
    const shared = await makePersona(service, outsider, "Public One");
    const hidden = await makePersona(service, outsider, "Private One", { is_public: false });
    const at = tick();
    expect(await call(service, member, "POST", `/v1/rooms/${room.id}/personas`, 200, { persona_id: own.id })).toEqual({
      room_id: room.id,
      persona_id: own.id,
      name: "Mira's",
      added_at: at.toISOString(),
    });
    await call(service, member, "POST", `/v1/rooms/${room.id}/personas`, 200, { persona_id: shared.id });
    await expectError(await raw(member, "POST", `/v1/rooms/${room.id}/personas`, { persona_id: hidden.id }), 404, "not_found");
    await expectError(await raw(member, "POST", `/v1/rooms/${room.id}/personas`, { persona_id: own.id }), 409, "conflict");
    await expectError(await raw(member, "POST", `/v1/rooms/${room.id}/personas`, { persona_id: "x" }), 400, "invalid_request");
    // The owner sees the member's private persona in the room by name.
    expect((await call(service, owner, "GET", `/v1/rooms/${room.id}`, 200)).personas.map((p: { name: string }) => p.name)).toEqual(["Mira's", "Public One"]);
  });

  it("lets the owner remove any persona and a member only the ones it added", async () => {
    const ownersPersona = await makePersona(service, owner, "Owner's");
    const room = await makeRoom(service, owner, { persona_ids: [ownersPersona.id] });
    await addMember(service, owner, room.id, member);
    const membersPersona = await makePersona(service, member, "Member's");
    await call(service, member, "POST", `/v1/rooms/${room.id}/personas`, 200, { persona_id: membersPersona.id });
    await expectError(await raw(member, "DELETE", `/v1/rooms/${room.id}/personas/${ownersPersona.id}`), 403, "forbidden");
    expect(await call(service, member, "DELETE", `/v1/rooms/${room.id}/personas/${membersPersona.id}`, 200)).toEqual({ deleted: true, room_id: room.id, persona_id: membersPersona.id });
    expect(await call(service, owner, "DELETE", `/v1/rooms/${room.id}/personas/${ownersPersona.id}`, 200)).toMatchObject({ deleted: true });
    await expectError(await raw(owner, "DELETE", `/v1/rooms/${room.id}/personas/${ownersPersona.id}`), 404, "not_found");
    await expectError(await raw(owner, "DELETE", `/v1/rooms/${room.id}/personas/${randomUUID()}`), 404, "not_found");
  });

  it("holds at most ten personas (409 for the eleventh)", async () => {
    const personas = [];
    for (let i = 0; i < 11; i++) personas.push(await makePersona(service, owner, `P${i}`));
    const room = await makeRoom(service, owner, { persona_ids: personas.slice(0, 10).map((p) => p.id) });
    expect(room.personas).toHaveLength(10);
    const body = await expectError(await raw(owner, "POST", `/v1/rooms/${room.id}/personas`, { persona_id: personas[10]!.id }), 409, "conflict");
    expect(body.error.details).toEqual({ limit: 10 });
  });

  it("hides the persona of a deleted account from the room", async () => {
    const leaving = await creator(service);
    const persona = await makePersona(service, leaving, "Fading");
    const room = await makeRoom(service, owner, { persona_ids: [persona.id] });
    await service.fetch("/v1/auth/me", { method: "DELETE", headers: leaving.auth });
    expect((await call(service, owner, "GET", `/v1/rooms/${room.id}`, 200)).personas).toEqual([]);
  });
});

describe("the room list", () => {
  it("lists the caller's rooms with counts, the most recently active first", async () => {
    const lister = await creator(service);
    const persona = await makePersona(service, lister, "Counted");
    tick();
    const quiet = await makeRoom(service, lister, { name: "quiet" });
    tick();
    const busy = await makeRoom(service, lister, { name: "busy", persona_ids: [persona.id] });
    tick();
    const later = await makeRoom(service, lister, { name: "later" });
    await addMember(service, lister, busy.id, member);
    const at = tick();
    // Posting in the oldest room brings it to the top.
    await call(service, lister, "POST", `/v1/rooms/${quiet.id}/messages`, 201, { content: "hello" });
    const page = await call(service, lister, "GET", "/v1/rooms?limit=2", 200);
    expect(page).toEqual({
      data: [
        { id: quiet.id, name: "quiet", description: "", is_public: false, member_count: 1, persona_count: 0, last_message_at: at.toISOString(), created_at: quiet.created_at },
        { id: later.id, name: "later", description: "", is_public: false, member_count: 1, persona_count: 0, last_message_at: null, created_at: later.created_at },
      ],
      total: 3,
      limit: 2,
      offset: 0,
    });
    const rest = await call(service, lister, "GET", "/v1/rooms?limit=2&offset=2", 200);
    expect(rest.data).toEqual([expect.objectContaining({ id: busy.id, member_count: 2, persona_count: 1 })]);
    // A member sees the room too; an outsider does not.
    expect((await call(service, member, "GET", "/v1/rooms?limit=100", 200)).data.map((r: { id: string }) => r.id)).toContain(busy.id);
    expect((await call(service, outsider, "GET", "/v1/rooms?limit=100", 200)).data.map((r: { id: string }) => r.id)).not.toContain(busy.id);
    await expectError(await raw(lister, "GET", "/v1/rooms?limit=101"), 400, "invalid_request");
    await expectError(await raw(lister, "GET", "/v1/rooms?offset=-1"), 400, "invalid_request");
  });
});

describe("messages", () => {
  it("checks the content's length (1 to 4,000 characters)", async () => {
    const room = await makeRoom(service, owner);
    await call(service, owner, "POST", `/v1/rooms/${room.id}/messages`, 201, { content: "x".repeat(4000) });
    await call(service, owner, "POST", `/v1/rooms/${room.id}/messages`, 201, { content: "x" });
    for (const body of [{ content: "" }, { content: "x".repeat(4001) }, {}, { content: 5 }]) {
      await expectError(await raw(owner, "POST", `/v1/rooms/${room.id}/messages`, body), 400, "invalid_request");
    }
    expect((await call(service, owner, "GET", `/v1/rooms/${room.id}/messages`, 200)).total).toBe(2);
  });

  it("answers an empty persona_responses in a room without personas, with the sender's name", async () => {
    const room = await makeRoom(service, owner);
    await service.services.db.knex("users").where({ id: owner.id }).update({ display_name: "Olga O." });
    const at = tick();
    const sent = await call(service, owner, "POST", `/v1/rooms/${room.id}/messages`, 201, { content: "anyone here?" });
    expect(sent).toEqual({
      id: expect.any(String),
      room_id: room.id,
      sender: { type: "user", id: owner.id, name: "Olga O." },
      content: "anyone here?",
      created_at: at.toISOString(),
      persona_responses: [],
    });
    await service.services.db.knex("users").where({ id: owner.id }).update({ display_name: null });
    const [message] = (await call(service, owner, "GET", `/v1/rooms/${room.id}/messages`, 200)).data;
    expect(message.sender).toEqual({ type: "user", id: owner.id, name: "olga" });
  });

  it("pages history newest first, stable for equal timestamps, with before", async () => {
    const room = await makeRoom(service, owner);
    await addMember(service, owner, room.id, member);
    const first = tick();
    const sent: string[] = [];
    // Three messages in the same instant, then two later ones.
    for (const content of ["a", "b", "c"]) sent.push((await call(service, owner, "POST", `/v1/rooms/${room.id}/messages`, 201, { content })).id);
    const second = tick();
    for (const content of ["d", "e"]) sent.push((await call(service, member, "POST", `/v1/rooms/${room.id}/messages`, 201, { content })).id);
    const all = await call(service, member, "GET", `/v1/rooms/${room.id}/messages`, 200);
    expect(all.data.map((m: { content: string }) => m.content)).toEqual(["e", "d", "c", "b", "a"]);
    expect(all).toMatchObject({ total: 5, limit: 50, offset: 0 });
    const pages = [];
    for (let offset = 0; offset < 5; offset += 2) pages.push(...(await call(service, member, "GET", `/v1/rooms/${room.id}/messages?limit=2&offset=${offset}`, 200)).data);
    expect(pages.map((m: { id: string }) => m.id)).toEqual([...sent].reverse());
    const older = await call(service, member, "GET", `/v1/rooms/${room.id}/messages?before=${encodeURIComponent(second.toISOString())}`, 200);
    expect(older.data.map((m: { content: string }) => m.content)).toEqual(["c", "b", "a"]);
    expect(older.total).toBe(3);
    const none = await call(service, member, "GET", `/v1/rooms/${room.id}/messages?before=${encodeURIComponent(first.toISOString())}`, 200);
    expect(none).toEqual({ data: [], total: 0, limit: 50, offset: 0 });
    await call(service, member, "GET", `/v1/rooms/${room.id}/messages?limit=200`, 200);
    await expectError(await raw(member, "GET", `/v1/rooms/${room.id}/messages?limit=201`), 400, "invalid_request");
    await expectError(await raw(member, "GET", `/v1/rooms/${room.id}/messages?limit=0`), 400, "invalid_request");
    await expectError(await raw(member, "GET", `/v1/rooms/${room.id}/messages?before=yesterday`), 400, "invalid_request");
  });

  it("takes two users posting at once", async () => {
    const room = await makeRoom(service, owner);
    await addMember(service, owner, room.id, member);
    await Promise.all([
      ...Array.from({ length: 5 }, (_, i) => call(service, owner, "POST", `/v1/rooms/${room.id}/messages`, 201, { content: `o${i}` })),
      ...Array.from({ length: 5 }, (_, i) => call(service, member, "POST", `/v1/rooms/${room.id}/messages`, 201, { content: `m${i}` })),
    ]);
    const { data, total } = await call(service, owner, "GET", `/v1/rooms/${room.id}/messages`, 200);
    expect(total).toBe(10);
    expect(new Set(data.map((m: { content: string }) => m.content)).size).toBe(10);
  });
});

describe("account data", () => {
  it("exports the rooms the user owns and belongs to, with members, personas and messages", async () => {
    const exporter = await creator(service);
    const persona = await makePersona(service, exporter, "Exported");
    const own = await makeRoom(service, exporter, { name: "mine", persona_ids: [persona.id] });
    await addMember(service, exporter, own.id, member);
    await call(service, member, "POST", `/v1/rooms/${own.id}/messages`, 201, { content: "from mira" });
    const theirs = await makeRoom(service, member, { name: "theirs" });
    await addMember(service, member, theirs.id, exporter);
    await call(service, member, "POST", `/v1/rooms/${theirs.id}/messages`, 201, { content: "not the exporter's" });
    await call(service, exporter, "POST", `/v1/rooms/${theirs.id}/messages`, 201, { content: "the exporter's" });
    const archive = (await archiveOf(service.services, exporter.id)) as unknown as { rooms: Record<string, unknown>[] };
    const byName = new Map(archive.rooms.map((room) => [room.name, room]));
    expect(byName.get("mine")).toMatchObject({
      id: own.id,
      owner_id: exporter.id,
      role: "owner",
      members: [expect.objectContaining({ user_id: exporter.id, role: "owner" }), expect.objectContaining({ user_id: member.id, role: "member" })],
      personas: [expect.objectContaining({ persona_id: persona.id })],
      // Mira's message and the persona's reply to it.
      messages: [expect.objectContaining({ content: "from mira", sender_type: "user" }), expect.objectContaining({ persona_id: persona.id, sender_type: "persona" })],
    });
    // In another user's room, only what the user wrote.
    expect(byName.get("theirs")).toMatchObject({ id: theirs.id, role: "member", messages: [expect.objectContaining({ content: "the exporter's" })] });
    expect((byName.get("theirs")!.messages as unknown[]).length).toBe(1);
  });

  it("purges the user's rooms, memberships and messages, and keeps others' rooms", async () => {
    expect(await nonCascadingUserReferences(service.services.db.knex)).toEqual([]);
    const leaving = await creator(service);
    const stayer = await creator(service);
    const own = await makeRoom(service, leaving);
    const theirs = await makeRoom(service, stayer);
    await addMember(service, stayer, theirs.id, leaving);
    await call(service, leaving, "POST", `/v1/rooms/${theirs.id}/messages`, 201, { content: "leaving soon" });
    await call(service, stayer, "POST", `/v1/rooms/${theirs.id}/messages`, 201, { content: "staying" });
    // A persona's reply to the leaving member's post, billed to them (docs/adr/0375).
    const persona = await makePersona(service, stayer, "Doctor Farewell");
    const answered = await makeRoom(service, stayer, { persona_ids: [persona.id], reply_mode: "all" });
    await addMember(service, stayer, answered.id, leaving);
    await call(service, leaving, "POST", `/v1/rooms/${answered.id}/messages`, 201, { content: "one question before I go" });
    expect((await service.services.db.knex("room_messages").where({ room_id: answered.id, sender_type: "persona" })).map((m) => m.billed_user_id)).toEqual([leaving.id]);
    await service.fetch("/v1/auth/me", { method: "DELETE", headers: leaving.auth });
    clock = new Date(clock.getTime() + 31 * DAY_MS);
    await purgeDeletedAccounts(service.services);
    const { knex } = service.services.db;
    expect(await knex("rooms").where({ id: own.id })).toEqual([]);
    expect(await knex("room_members").where({ user_id: leaving.id })).toEqual([]);
    expect(await knex("room_messages").where({ user_id: leaving.id })).toEqual([]);
    expect((await knex("room_messages").where({ room_id: theirs.id })).map((m) => m.content)).toEqual(["staying"]);
    // The persona's reply stays in the room, billed to no one.
    expect((await knex("room_messages").where({ room_id: answered.id })).map((m) => [m.sender_type, m.billed_user_id])).toEqual([["persona", null]]);
    // The live stream's copies go with them: its joining and its message; the stayer's message stays.
    expect(await knex("room_events").where({ user_id: leaving.id })).toEqual([]);
    expect((await knex("room_events").where({ room_id: theirs.id }).orderBy("id")).map((e) => [e.type, e.data.content])).toEqual([["message", "staying"]]);
  });
});
