import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ScriptedModel } from "../replies/fakes.ts";
import { expectError } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { addMember, call, creator, makePersona, makeRoom, serviceEnv } from "./helpers.ts";

// Who answers a room message, through the reply engine with a model in memory: named personas in
// mention order, one persona otherwise (the most relevant, else the one that spoke least recently),
// at most three, a model failure part way, the quota, and an idempotent send.
let service: TestService;
let model: ScriptedModel;
let owner: TestUser;
let member: TestUser;

beforeAll(async () => {
  model = new ScriptedModel();
  service = await startTestService({ providers: { llm: model }, env: serviceEnv });
  [owner, member] = [await creator(service, "olga"), await creator(service, "mira")];
});

afterAll(async () => {
  await service?.close();
});

const send = (user: TestUser, roomId: string, content: string, headers: Record<string, string> = {}) =>
  service.clientFor(user).POST("/v1/rooms/{id}/messages", { params: { path: { id: roomId } }, body: { content }, headers });

const names = (sent: { persona_responses: { persona_name: string }[] }) => sent.persona_responses.map((r) => r.persona_name);
/** The persona's instructions each model call was given, in order. */
const asked = (from: number) => model.requests.slice(from).map((request) => request.messages[0]!.content.match(/You are ([^.]+)\./)?.[1]);

async function roomWith(...personaNames: string[]) {
  return roomIn({}, ...personaNames);
}

async function roomIn(fields: Record<string, unknown>, ...personaNames: string[]) {
  const personas = [];
  for (const name of personaNames) personas.push(await makePersona(service, owner, name, { description: `${name} talks about ${name.toLowerCase()} things.` }));
  const room = await makeRoom(service, owner, { persona_ids: personas.map((p) => p.id), ...fields });
  await addMember(service, owner, room.id, member);
  return { room, personas };
}

describe("who answers", () => {
  it("answers with the named personas in mention order, case-insensitive, each storing its reply", async () => {
    const { room, personas } = await roomWith("Nova", "Nova Prime", "Quill");
    const from = model.requests.length;
    model.next({ chunks: ["Prime here."] });
    model.next({ chunks: ["Quill here."] });
    const { data, response } = await send(member, room.id, "@quill and @NOVA PRIME, which star is that?");
    expect(response.status).toBe(201);
    const sent = data!;
    expect(sent).toMatchObject({ sender: { type: "user", id: member.id, name: "mira" }, content: "@quill and @NOVA PRIME, which star is that?" });
    // "@NOVA PRIME" names Nova Prime, not Nova; Quill is named first.
    expect(names(sent)).toEqual(["Quill", "Nova Prime"]);
    expect(sent.persona_responses.map((r) => r.content)).toEqual(["Prime here.", "Quill here."]);
    expect(sent.persona_responses[0]).toEqual({ id: expect.any(String), persona_id: personas[2]!.id, persona_name: "Quill", content: "Prime here.", created_at: expect.any(String) });
    expect(asked(from)).toEqual(["Quill", "Nova Prime"]);
    // The second persona read the first one's reply, attributed by name, and the message with its author.
    const second = model.requests.at(-1)!.messages;
    expect(second.map((turn) => turn.content)).toContain("Quill: Prime here.");
    // Each persona's own greeting opens what it heard, once: its oldest turn after the instructions.
    expect(second[1]).toEqual({ role: "assistant", content: "Hi." });
    expect(second.filter((turn) => turn.content === "Hi.")).toHaveLength(1);
    expect(second.at(-1)).toEqual({ role: "user", content: "mira: @quill and @NOVA PRIME, which star is that?" });
    const history = await call(service, owner, "GET", `/v1/rooms/${room.id}/messages`, 200);
    expect(history.data.map((m: { sender: { name: string } }) => m.sender.name)).toEqual(["Nova Prime", "Quill", "mira"]);
    expect(history.data[0].sender).toEqual({ type: "persona", id: personas[1]!.id, name: "Nova Prime" });
  });

  it("lets at most three personas answer one message", async () => {
    const { room } = await roomWith("A1", "B2", "C3", "D4");
    const sent = await call(service, owner, "POST", `/v1/rooms/${room.id}/messages`, 201, { content: "@d4 @c3 @b2 @a1 roll call" });
    expect(names(sent)).toEqual(["D4", "C3", "B2"]);
  });

  it("has one persona answer when none is named: the most relevant one", async () => {
    const { room } = await roomWith("Astronomer", "Chef");
    const sent = await call(service, member, "POST", `/v1/rooms/${room.id}/messages`, 201, { content: "What should I cook tonight? Any chef things?" });
    expect(names(sent)).toEqual(["Chef"]);
  });

  it("takes turns when nothing makes one more relevant: the one that spoke least recently answers", async () => {
    const { room } = await roomWith("Alpha", "Beta", "Gamma");
    const answered = [];
    for (let i = 0; i < 4; i++) answered.push(...names(await call(service, member, "POST", `/v1/rooms/${room.id}/messages`, 201, { content: `hello ${i}` })));
    expect(answered).toEqual(["Alpha", "Beta", "Gamma", "Alpha"]);
  });

  it("does not answer with a persona whose creator deleted the account", async () => {
    const leaving = await creator(service);
    const ghost = await makePersona(service, leaving, "Ghost");
    const room = await makeRoom(service, owner, { persona_ids: [ghost.id] });
    await service.fetch("/v1/auth/me", { method: "DELETE", headers: leaving.auth });
    const sent = await call(service, owner, "POST", `/v1/rooms/${room.id}/messages`, 201, { content: "@ghost are you there?" });
    expect(sent.persona_responses).toEqual([]);
  });
});

describe("the room's reply mode", () => {
  it("mentions_only: only named personas answer", async () => {
    const { room } = await roomIn({ reply_mode: "mentions_only" }, "Mute", "Named");
    expect(room.reply_mode).toBe("mentions_only");
    expect((await call(service, member, "POST", `/v1/rooms/${room.id}/messages`, 201, { content: "hello everyone" })).persona_responses).toEqual([]);
    expect(names(await call(service, member, "POST", `/v1/rooms/${room.id}/messages`, 201, { content: "@named hello" }))).toEqual(["Named"]);
  });

  it("all: every persona answers in the room's order, at most three", async () => {
    const { room } = await roomIn({ reply_mode: "all" }, "One", "Two", "Three", "Four");
    expect(names(await call(service, member, "POST", `/v1/rooms/${room.id}/messages`, 201, { content: "@four roll call" }))).toEqual(["One", "Two", "Three"]);
  });

  it("is changed by the owner's update", async () => {
    const { room } = await roomWith("Switch", "Other");
    expect((await call(service, owner, "PUT", `/v1/rooms/${room.id}`, 200, { reply_mode: "mentions_only" })).reply_mode).toBe("mentions_only");
    expect((await call(service, member, "POST", `/v1/rooms/${room.id}/messages`, 201, { content: "switch things" })).persona_responses).toEqual([]);
  });
});

describe("failures and the quota", () => {
  it("answers 502 when the model fails part way, keeping the message and the replies before the failure", async () => {
    const { room } = await roomWith("First", "Second", "Third");
    model.next({ chunks: ["First answer."] });
    model.next({ failAfter: 0 });
    const body = await expectError(await send(member, room.id, "@first @second @third status?"), 502, "upstream_error");
    expect(body.error.details.message).toMatchObject({ content: "@first @second @third status?", persona_responses: [{ persona_name: "First", content: "First answer." }] });
    const history = await call(service, member, "GET", `/v1/rooms/${room.id}/messages`, 200);
    expect(history.data.map((m: { content: string }) => m.content)).toEqual(["First answer.", "@first @second @third status?"]);
  });

  it("answers 402 when the quota is used up, storing nothing, and counts each reply", async () => {
    const poor = await registerUser(service);
    const persona = await makePersona(service, poor, "Budget");
    const room = await makeRoom(service, poor, { persona_ids: [persona.id] });
    const { knex } = service.services.db;
    const period = new Date().toISOString().slice(0, 8) + "01";
    await knex("usage_counters").insert({ user_id: poor.id, period_start: period, messages_sent: 199 });
    expect(names(await call(service, poor, "POST", `/v1/rooms/${room.id}/messages`, 201, { content: "the 200th" }))).toEqual(["Budget"]);
    const body = await expectError(await send(poor, room.id, "one too many"), 402, "plan_limit_exceeded");
    expect(body.error.details).toEqual({ limit: 200, used: 200, plan: "free" });
    expect((await call(service, poor, "GET", `/v1/rooms/${room.id}/messages`, 200)).total).toBe(2);
  });
});

describe("an idempotent send", () => {
  it("answers a retry with the same key from the first send, storing nothing twice", async () => {
    const { room } = await roomWith("Once");
    const key = crypto.randomUUID();
    const first = await send(member, room.id, "hello once", { "idempotency-key": key });
    expect(first.response.status).toBe(201);
    const calls = model.requests.length;
    const again = await send(member, room.id, "hello once", { "idempotency-key": key });
    expect(again.response.status).toBe(201);
    expect(again.response.headers.get("idempotent-replayed")).toBe("true");
    expect(again.data).toEqual(first.data);
    expect(model.requests.length).toBe(calls);
    expect((await call(service, member, "GET", `/v1/rooms/${room.id}/messages`, 200)).total).toBe(2);
    await expectError(await send(member, room.id, "something else", { "idempotency-key": key }), 409, "conflict");
  });
});
