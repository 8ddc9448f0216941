import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { createConversation, createPersona, sendBlocking, sendStream } from "../support/chat.ts";
import { readIdEvents } from "../support/generations.ts";
import { eventually } from "../support/wait.ts";
import { databaseKind } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";
import { modelAccountData } from "../../server/areas/models/account-data.ts";
import { callBody, chatCalls, KEYS, personaOnConnection, quotaUsed, startModelsWorld, storedReply, type ModelsWorld } from "./support.ts";

// Issue 40, item 4: a user's own provider connection (bring your own key). The key is kept sealed,
// answered, exported and logged never; the user's chats with a persona that names the connection
// (or all their chats, with a default one) run on it with their key and count against no quota.
// The fakes are on loopback: this server lets connections reach private addresses (the operator's
// setting); the refusals of private addresses have their own file (connections-ssrf.test.ts).
const OWN_KEY = "sk-own-user-key-9f3a5c7e1b2d4a6c8e0f";
let world: ModelsWorld;
let own: FakeOpenAI;
let alice: TestUser;
let bob: TestUser;
let logText = "";

beforeAll(async () => {
  own = await startFakeOpenAI();
  const sink = new Writable({ write: (chunk, _encoding, done) => void ((logText += String(chunk)), done()) });
  world = await startModelsWorld({ PROVIDER_CONNECTIONS_ALLOW_PRIVATE_URLS: "true", DEFAULT_PLAN: "free" }, { log: pino({ level: "debug" }, sink) });
  [alice, bob] = await Promise.all([registerUser(world.service), registerUser(world.service)]);
});

beforeEach(() => {
  for (const fake of [own, world.first, world.second]) fake.reset();
});

afterAll(async () => {
  await world?.close();
  await own?.close();
});

const api = (user: TestUser) => world.service.clientFor(user);
/** A blocking completion's body (the operation also declares the streamed one). */
type Completion = { usage: { prompt_tokens: number; completion_tokens: number; cost_usd?: number } };

async function connect(user: TestUser, body: Record<string, unknown> = {}) {
  const answer = await api(user).POST("/v1/provider-connections", { body: { name: "My server", base_url: own.baseUrl, api_key: OWN_KEY, ...body } });
  expect(answer.response.status, JSON.stringify(answer.error)).toBe(201);
  return answer.data!;
}

describe(`provider connections (${databaseKind})`, () => {
  it("are created, listed, read, changed and deleted by their owner, with a hint of the key and never the key", async () => {
    const created = await connect(alice, { model: "own-llama", context_window: 32000 });
    expect(created).toEqual({
      id: expect.any(String),
      name: "My server",
      base_url: own.baseUrl,
      key_hint: "…8e0f",
      model: "own-llama",
      context_window: 32000,
      is_default: false,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const list = await api(alice).GET("/v1/provider-connections");
    expect(list.data).toEqual({ data: [created], total: 1 });
    const read = await api(alice).GET("/v1/provider-connections/{id}", { params: { path: { id: created.id } } });
    expect(read.data).toEqual(created);
    const changed = await api(alice).PUT("/v1/provider-connections/{id}", { params: { path: { id: created.id } }, body: { api_key: "sk-replaced-key-000000000001", is_default: true, model: null } });
    expect(changed.data).toMatchObject({ key_hint: "…0001", is_default: true, model: null, context_window: 32000 });
    for (const answer of [created, list.data, read.data, changed.data]) expect(JSON.stringify(answer)).not.toContain("sk-");
    // At rest, sealed.
    const row = await world.service.services.db.knex("provider_connections").where({ id: created.id }).first();
    expect(row.api_key_encrypted).toMatch(/^v1\./);
    expect(JSON.stringify(row)).not.toContain("sk-replaced");
    const deleted = await api(alice).DELETE("/v1/provider-connections/{id}", { params: { path: { id: created.id } } });
    expect(deleted.data).toEqual({ id: created.id, deleted: true });
    expect((await api(alice).GET("/v1/provider-connections/{id}", { params: { path: { id: created.id } } })).response.status).toBe(404);
  });

  it("are another user's to see or change never (404), and need an admin credential (403 for a chat key)", async () => {
    const mine = await connect(alice);
    const path = { params: { path: { id: mine.id } } };
    expect((await api(bob).GET("/v1/provider-connections/{id}", path)).response.status).toBe(404);
    expect((await api(bob).PUT("/v1/provider-connections/{id}", { ...path, body: { name: "Stolen" } })).response.status).toBe(404);
    expect((await api(bob).DELETE("/v1/provider-connections/{id}", path)).response.status).toBe(404);
    expect((await api(bob).GET("/v1/provider-connections")).data).toEqual({ data: [], total: 0 });
    const chatKey = await apiKeyFor(world.service, alice, ["chat"]);
    expect((await world.service.clientFor({ auth: { "x-api-key": chatKey } }).GET("/v1/provider-connections")).response.status).toBe(403);
    expect((await world.service.fetch("/v1/provider-connections")).status).toBe(401);
    await api(alice).DELETE("/v1/provider-connections/{id}", path);
  });

  it("refuse bad input: a URL that is no http(s) URL or carries credentials, a window out of bounds, a missing name", async () => {
    // (A host that does not resolve, or resolves to a private address: connections-ssrf.test.ts.)
    for (const [body, path] of [
      [{ name: "x", base_url: "ftp://example.com/v1" }, "/body/base_url"],
      [{ name: "x", base_url: "http://user:pass@127.0.0.1:9/v1" }, "/body/base_url"],
      [{ name: "x", base_url: own.baseUrl, context_window: 100 }, "/body/context_window"],
      [{ name: "", base_url: own.baseUrl }, "/body/name"],
    ] as const) {
      const answer = await api(alice).POST("/v1/provider-connections", { body: body as never });
      expect(answer.response.status, JSON.stringify(body)).toBe(400);
      expect((answer.error as { error: { details: { errors: { path: string }[] } } }).error.details.errors[0]!.path).toBe(path);
    }
  });

  it("are at most ten per account (409), and one default at a time", async () => {
    const erin = await registerUser(world.service);
    const first = await connect(erin, { is_default: true });
    for (let i = 1; i < 10; i++) await connect(erin, { name: `n${i}` });
    const eleventh = await api(erin).POST("/v1/provider-connections", { body: { name: "one too many", base_url: own.baseUrl } });
    expect(eleventh.response.status).toBe(409);
    const second = (await api(erin).GET("/v1/provider-connections")).data!.data[0]!;
    await api(erin).PUT("/v1/provider-connections/{id}", { params: { path: { id: second.id } }, body: { is_default: true } });
    const defaults = (await api(erin).GET("/v1/provider-connections")).data!.data.filter((connection) => connection.is_default);
    expect(defaults.map((connection) => connection.id)).toEqual([second.id]);
    expect(defaults[0]!.id).not.toBe(first.id);
  });
});

describe(`replies on a user's own key (${databaseKind})`, () => {
  it("run the owner's chats with a persona that names the connection there, with their key, at no cost and no quota", async () => {
    const connection = await connect(alice, { name: "Alice's", model: "own-llama" });
    const persona = await personaOnConnection(world.service, alice, connection.id, { name: "On my key", model: "alpha", is_public: true });
    expect(persona).toMatchObject({ provider_connection_id: connection.id });
    const conversation = await createConversation(world.service, alice, persona.id, "own key");
    const before = await quotaUsed(world.service, alice);
    const answer = await sendBlocking(world.service, alice, conversation.id, "Hello");
    expect(answer.status).toBe(201);
    const { assistant_message: reply } = await answer.json();
    expect(chatCalls(own)).toHaveLength(1);
    expect(chatCalls(own)[0]!.headers.authorization).toBe(`Bearer ${OWN_KEY}`);
    // The connection's model name; the persona's model's output.
    expect(callBody(own)).toMatchObject({ model: "own-llama", max_tokens: 256 });
    expect(chatCalls(world.first)).toHaveLength(0);
    expect(await storedReply(world.service, reply.id)).toMatchObject({ model_id: "alpha", own_key: true, fallback_from: null });
    expect(Number((await storedReply(world.service, reply.id)).cost_nanos)).toBe(0);
    expect(await quotaUsed(world.service, alice)).toBe(before);

    // Streamed too.
    const events = await readIdEvents(await sendStream(world.service, alice, conversation.id, "again"));
    expect(events.at(-1)!.event).toBe("done");
    expect(chatCalls(own)).toHaveLength(2);
    expect(await quotaUsed(world.service, alice)).toBe(before);

    // Usage reports them apart.
    const usage = await api(alice).GET("/v1/billing/usage");
    expect(usage.data!.costs).toMatchObject({ own_key_replies: 2, cost_usd: 0 });

    // Anyone else's chats with the public persona run on its model, on the server's key; they see no connection.
    const seen = await api(bob).GET("/v1/personas/{id}", { params: { path: { id: persona.id } } });
    expect(seen.data).toMatchObject({ provider_connection_id: null });
    const theirs = await createConversation(world.service, bob, persona.id, "not on alice's key");
    const bobBefore = await quotaUsed(world.service, bob);
    expect((await sendBlocking(world.service, bob, theirs.id, "Hi")).status).toBe(201);
    expect(chatCalls(own)).toHaveLength(2);
    expect(chatCalls(world.first)[0]!.headers.authorization).toBe(`Bearer ${KEYS.alpha}`);
    expect(await quotaUsed(world.service, bob)).toBe(bobBefore + 1);
  });

  it("run every chat of a user with a default connection, on the OpenAI-compatible door too", async () => {
    const frank = await registerUser(world.service);
    await connect(frank, { is_default: true });
    const persona = await createPersona(world.service, frank, { name: "Frank's", model: "beta" });
    const conversation = await createConversation(world.service, frank, persona.id, "default");
    expect((await sendBlocking(world.service, frank, conversation.id, "Hi")).status).toBe(201);
    expect(callBody(own)).toMatchObject({ model: "beta-upstream" });
    const key = await apiKeyFor(world.service, frank, ["chat"]);
    const door = await world.service.clientFor({ auth: { authorization: `Bearer ${key}` } }).POST("/openai/v1/chat/completions", {
      body: { model: "frank-s", messages: [{ role: "user", content: "Hello" }] },
    });
    expect(door.response.status).toBe(200);
    expect((door.data as Completion).usage.cost_usd).toBe(0);
    expect(chatCalls(own)).toHaveLength(2);
    expect(chatCalls(world.second)).toHaveLength(0);
    expect(await quotaUsed(world.service, frank)).toBe(0);
  });

  it("may be named when a persona is created, and the persona's chats run on it", async () => {
    const connection = await connect(alice, { name: "From the start", model: "own-llama" });
    const created = await api(alice).POST("/v1/personas", { body: { name: "Keyed from birth", instructions: "Be brief.", greeting_message: "Hi.", provider_connection_id: connection.id } });
    expect(created.response.status, JSON.stringify(created.error)).toBe(201);
    expect(created.data).toMatchObject({ provider_connection_id: connection.id });
    const conversation = await createConversation(world.service, alice, created.data!.id, "keyed");
    expect((await sendBlocking(world.service, alice, conversation.id, "Hello")).status).toBe(201);
    expect(chatCalls(own)).toHaveLength(1);
    expect(chatCalls(world.first)).toHaveLength(0);
  });

  it("also write the persona's greeting and the conversation's title there, never on the server's key", async () => {
    const carol = await registerUser(world.service);
    const connection = await connect(carol, { name: "All mine", model: "own-llama" });
    const calls = (fake: FakeOpenAI, text: string) => chatCalls(fake).filter((call) => JSON.stringify(call.body).includes(text));
    // No greeting given: the model writes one, on the creator's connection.
    const created = await api(carol).POST("/v1/personas", { body: { name: "Ungreeted", instructions: "Be brief.", provider_connection_id: connection.id } });
    expect(created.response.status, JSON.stringify(created.error)).toBe(201);
    await eventually(async () => calls(own, "greeting you open every new conversation").length === 1);
    // No title given: the model writes one after the first exchange, on the same connection.
    const conversation = await createConversation(world.service, carol, created.data!.id);
    expect((await sendBlocking(world.service, carol, conversation.id, "Hello there")).status).toBe(201);
    await eventually(async () => calls(own, "Write a short title").length === 1);
    expect(calls(own, "Write a short title")[0]!.headers.authorization).toBe(`Bearer ${OWN_KEY}`);
    expect(chatCalls(world.first)).toHaveLength(0);
    expect(chatCalls(world.second)).toHaveLength(0);
  });

  it("may name only the owner's own connections (400 otherwise), at creation too, where nothing is created", async () => {
    const theirs = await connect(bob);
    const borrower = await createPersona(world.service, alice, { name: "Borrower" });
    const answer = await api(alice).PUT("/v1/personas/{id}", { params: { path: { id: borrower.id } }, body: { provider_connection_id: theirs.id } });
    expect(answer.response.status).toBe(400);
    expect(answer.error).toMatchObject({ error: { details: { errors: [{ path: "/body/provider_connection_id", message: "is not one of your provider connections" }] } } });

    const count = async () => Number((await world.service.services.db.knex("personas").where({ creator_id: alice.id }).count({ n: "*" }).first())!.n);
    const before = await count();
    const refused = await api(alice).POST("/v1/personas", { body: { name: "Borrower two", instructions: "Be brief.", provider_connection_id: theirs.id } });
    expect(refused.response.status).toBe(400);
    expect(refused.error).toMatchObject({ error: { details: { errors: [{ path: "/body/provider_connection_id", message: "is not one of your provider connections" }] } } });
    expect(await count()).toBe(before);
  });

  it("fail with a message naming the connection, and never write the key to the log or the data export", async () => {
    const gina = await registerUser(world.service);
    const connection = await connect(gina, { name: "Gina's box" });
    const persona = await personaOnConnection(world.service, gina, connection.id, { name: "Gina" });
    const conversation = await createConversation(world.service, gina, persona.id, "failing key");
    own.chat.next({ status: 401, errorBody: { error: { message: `Incorrect API key provided: ${OWN_KEY}`, type: "invalid_request_error", code: "invalid_api_key" } } });
    const answer = await sendBlocking(world.service, gina, conversation.id, "Hi");
    expect(answer.status).toBe(502);
    expect((await answer.json()).error.message).toBe("The provider connection `Gina's box` answered 401 (invalid_api_key)");
    // No fallback to the server's models on a user's own key.
    expect(chatCalls(world.first).length + chatCalls(world.second).length).toBe(0);
    expect(logText).toContain("Gina's box");
    expect(logText).not.toContain(OWN_KEY);
    expect(logText).not.toContain(OWN_KEY.slice(-12));
    const exported = await modelAccountData[0]!.exportRows!({ services: world.service.services, knex: world.service.services.db.knex, userId: gina.id, personaIds: [persona.id] });
    expect(exported).toHaveLength(1);
    expect(exported[0]).toMatchObject({ name: "Gina's box", key_hint: "…8e0f" });
    expect(Object.keys(exported[0]!)).not.toContain("api_key_encrypted");
  });
});
