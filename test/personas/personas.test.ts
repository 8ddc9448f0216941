import { v7 as uuidv7 } from "uuid";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatModelProvider } from "../../server/toolkit/providers/llm/index.ts";
import type { operations } from "../../generated/openapi.d.ts";
import { expectError, expectOk } from "../support/assertions.ts";
import { jsonHeaders, startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";

// Personas: create, get, update, delete and the owner's list; their limits, bad input, the plan
// limit, and what another user may see and do.
let service: TestService;
let clock = new Date("2026-11-21T10:00:00.000Z");
let alice: TestUser;
let bob: TestUser;

const PERSONAS = "/v1/personas";
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const MODELS = ["studio-large", "studio-small"];
const NOVA = {
  name: "Captain Nova",
  instructions: "You are Captain Nova, a warm retired starship captain. Explain astronomy through short anecdotes.",
};

// Greetings are the greeting job's business (greeting.test.ts); here the model just answers.
const greeter: ChatModelProvider = {
  name: "fake",
  complete: async (request) => ({ content: "Hello there.", model: request.model, usage: { inputTokens: 1, outputTokens: 1 } }),
  // eslint-disable-next-line require-yield
  stream: async function* () {
    throw new Error("not used");
  },
};

/** Moves the clock on, so that every write has its own timestamp. */
const tick = (ms = 1000) => (clock = new Date(clock.getTime() + ms));

type Auth = Record<string, string>;
type Json = Record<string, unknown>;

const send = (method: string, path: string, auth: Auth, body?: unknown) =>
  service.fetch(path, { method, headers: { ...jsonHeaders, ...auth }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });

async function create(user: TestUser, fields: Json = {}): Promise<Json & { id: string }> {
  const response = await send("POST", PERSONAS, user.auth, { ...NOVA, ...fields });
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(201);
  return body;
}

async function ok(response: Response, status = 200) {
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(status);
  return body;
}

const get = (user: { auth: Record<string, string> }, id: string) => service.clientFor(user).GET("/v1/personas/{id}", { params: { path: { id } } });
const list = (user: { auth: Record<string, string> }, query: NonNullable<operations["personas_list"]["parameters"]["query"]> = {}) =>
  expectOk(service.clientFor(user).GET("/v1/personas", { params: { query } }));
const countOf = async (user: TestUser) => Number((await service.services.db.knex("personas").where({ creator_id: user.id }).count({ n: "*" }).first())?.n);

/** A user with room for many personas (the free plan allows three). */
async function creator(): Promise<TestUser> {
  const user = await registerUser(service);
  await service.services.db.knex("users").where({ id: user.id }).update({ plan: "creator" });
  return user;
}

beforeAll(async () => {
  service = await startTestService({
    now: () => clock,
    providers: { llm: greeter },
    env: { CHAT_MODEL: MODELS[0]!, CHAT_MODELS: MODELS.join(","), RATE_LIMIT_PER_MINUTE: "100000", AUTO_AVATARS: "false" },
  });
  alice = await creator();
  bob = await creator();
});

afterAll(async () => {
  await service?.close();
});

describe("creating a persona", () => {
  it("answers 201 with the contract's defaults, the caller as creator and a UUIDv7 id", async () => {
    const now = tick();
    const body = await create(alice);
    expect(body).toEqual({
      id: expect.stringMatching(UUID_V7),
      ...NOVA,
      description: "",
      model: MODELS[0],
      avatar_url: null,
      is_public: false,
      category: "other",
      greeting_message: null,
      voice_id: "alloy",
      message_count: 0,
      allow_client_system_messages: true,
      handle: expect.stringMatching(/^captain-nova(-\d+)?$/),
      model_settings: {},
      provider_connection_id: null,
      creator_id: alice.id,
      content_rating: "general",
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
    });
  });

  it("keeps every field given", async () => {
    const fields = {
      description: "A retired starship captain who explains astronomy with stories from the bridge.",
      model: MODELS[1],
      avatar_url: "https://cdn.persona.example/avatars/nova.png",
      is_public: true,
      category: "tutor",
      greeting_message: "Welcome aboard, cadet!",
      voice_id: "nova",
    };
    const body = await create(alice, fields);
    expect(body).toMatchObject({ ...NOVA, ...fields, creator_id: alice.id, message_count: 0 });
    expect(await expectOk(get(alice, body.id))).toEqual(body);
  });

  it("ignores fields the contract does not take: id, creator, counters and timestamps are the server's", async () => {
    const now = tick();
    const forged = { id: uuidv7(), creator_id: bob.id, message_count: 999, created_at: "2020-01-01T00:00:00.000Z", colour: "red" };
    const body = await create(alice, forged);
    expect(body.id).not.toBe(forged.id);
    expect(body).toMatchObject({ creator_id: alice.id, message_count: 0, created_at: now.toISOString() });
    expect(body).not.toHaveProperty("colour");
  });

  it("refuses a model the server does not run, naming the allowed ones, and writes nothing", async () => {
    const user = await creator();
    const body = await expectError(await send("POST", PERSONAS, user.auth, { ...NOVA, model: "gpt-9" }), 400, "invalid_request");
    expect(body.error.details.errors).toEqual([{ path: "/body/model", message: `must be one of: ${MODELS.join(", ")}` }]);
    expect(await countOf(user)).toBe(0);
  });

  it("answers the same persona to a retry with the same Idempotency-Key", async () => {
    const user = await creator();
    const headers = { ...user.auth, "idempotency-key": "create-nova-1" };
    const first = await ok(await send("POST", PERSONAS, headers, NOVA), 201);
    const again = await ok(await send("POST", PERSONAS, headers, NOVA), 201);
    expect(again).toEqual(first);
    expect(await countOf(user)).toBe(1);
  });
});

describe("the limits of a persona's fields", () => {
  const accepted: [string, Json][] = [
    ["a one-character name", { name: "N" }],
    ["an 80-character name", { name: "n".repeat(80) }],
    ["80 characters outside the BMP (counted as characters, not UTF-16 units)", { name: "🚀".repeat(80) }],
    ["a 300-character description", { description: "d".repeat(300) }],
    ["an empty description", { description: "" }],
    ["32,000 characters of instructions", { instructions: "i".repeat(32_000) }],
    ["a 2,000-character greeting", { greeting_message: "g".repeat(2000) }],
  ];
  it.each(accepted)("accepts %s", async (_what, fields) => {
    const body = await create(alice, fields);
    expect(await expectOk(get(alice, body.id))).toMatchObject(fields);
  });

  const refused: [string, Json, string][] = [
    ["an empty name", { name: "" }, "/body/name"],
    ["an 81-character name", { name: "n".repeat(81) }, "/body/name"],
    ["a 301-character description", { description: "d".repeat(301) }, "/body/description"],
    ["empty instructions", { instructions: "" }, "/body/instructions"],
    ["32,001 characters of instructions", { instructions: "i".repeat(32_001) }, "/body/instructions"],
    ["an empty greeting", { greeting_message: "" }, "/body/greeting_message"],
    ["a 2,001-character greeting", { greeting_message: "g".repeat(2001) }, "/body/greeting_message"],
    ["no name", { name: undefined }, "/body/name"],
    ["no instructions", { instructions: undefined }, "/body/instructions"],
    ["an unknown voice", { voice_id: "robot" }, "/body/voice_id"],
    ["an unknown category", { category: "wizard" }, "/body/category"],
    ["a name that is a number", { name: 42 }, "/body/name"],
    ["is_public as a string", { is_public: "yes" }, "/body/is_public"],
    ["a null description", { description: null }, "/body/description"],
    ["a model that is not a string", { model: 7 }, "/body/model"],
    ["an avatar that is not an https URL", { avatar_url: "http://cdn.example/a.png" }, "/body/avatar_url"],
  ];
  it.each(refused)("refuses %s with 400, naming the field, and writes nothing", async (_what, fields, path) => {
    const user = await creator();
    const response = await send("POST", PERSONAS, user.auth, { ...NOVA, ...fields });
    const body = await expectError(response, 400, "invalid_request");
    expect(body.error.details.errors.map((e: { path: string }) => e.path)).toContain(path);
    expect(await countOf(user)).toBe(0);
  });

  it("refuses a body that is not an object, and one that is not JSON", async () => {
    const user = await creator();
    await expectError(await send("POST", PERSONAS, user.auth, [NOVA]), 400, "invalid_request");
    const broken = await service.fetch(PERSONAS, { method: "POST", headers: { ...jsonHeaders, ...user.auth }, body: '{"name": ' });
    await expectError(broken, 400, "invalid_request");
    expect(await countOf(user)).toBe(0);
  });
});

describe("the plan's persona limit", () => {
  it("answers 402 plan_limit_exceeded with {limit, used, plan} at the free plan's three, and counts what exists now", async () => {
    const carol = await registerUser(service);
    const made = [await create(carol), await create(carol), await create(carol)];
    const body = await expectError(await send("POST", PERSONAS, carol.auth, NOVA), 402, "plan_limit_exceeded");
    expect(body.error.details).toEqual({ limit: 3, used: 3, plan: "free" });
    expect(await countOf(carol)).toBe(3);

    await ok(await send("DELETE", `${PERSONAS}/${made[0]!.id}`, carol.auth));
    await create(carol);
    expect(await countOf(carol)).toBe(3);
  });

  it("lets exactly the allowed number of concurrent creations through", async () => {
    const dave = await registerUser(service);
    await create(dave);
    const responses = await Promise.all(Array.from({ length: 8 }, () => send("POST", PERSONAS, dave.auth, NOVA)));
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses).toEqual([201, 201, 402, 402, 402, 402, 402, 402]);
    expect(await countOf(dave)).toBe(3);
  });
});

describe("getting a persona", () => {
  it("answers the owner's persona in full", async () => {
    const made = await create(alice, { greeting_message: "Ahoy!" });
    expect(await expectOk(get(alice, made.id))).toEqual(made);
  });

  it("answers 404 for an id nobody has", async () => {
    await expectError(await get(alice, uuidv7()), 404, "not_found");
  });

  it("answers 400 for an id that is not a UUID (the contract says format: uuid)", async () => {
    const body = await expectError(await get(alice, "not-a-uuid"), 400, "invalid_request");
    expect(body.error.details.errors[0].path).toBe("/params/id");
  });

  it("answers 404 for the URN form of a UUID, which the format check lets through", async () => {
    const made = await create(alice);
    await expectError(await get(alice, `urn:uuid:${made.id}`), 404, "not_found");
  });

  it("does not take `explore` for an id", async () => {
    const body = await ok(await service.fetch(`${PERSONAS}/explore`, { headers: alice.auth }));
    expect(body).toMatchObject({ limit: 20, offset: 0 });
  });
});

describe("updating a persona", () => {
  it("changes only the supplied fields and moves updated_at", async () => {
    const made = await create(alice, { ...greeted, description: "Old text", is_public: false });
    const now = tick();
    const changes = { name: "Admiral Nova", is_public: true, voice_id: "onyx", model: MODELS[1], greeting_message: "At ease." };
    const body = await ok(await send("PUT", `${PERSONAS}/${made.id}`, alice.auth, changes));
    expect(body).toEqual({ ...made, ...changes, updated_at: now.toISOString() });
    expect(await expectOk(get(alice, made.id))).toEqual(body);
  });

  // With a greeting, so that no greeting job changes the persona while the test looks at it.
  const greeted = { greeting_message: "Hi." };

  it("changes nothing, updated_at included, when no field is supplied", async () => {
    const made = await create(alice, greeted);
    tick();
    expect(await ok(await send("PUT", `${PERSONAS}/${made.id}`, alice.auth, {}))).toEqual(made);
  });

  it("refuses an unknown model and bad fields, changing nothing", async () => {
    const made = await create(alice, greeted);
    tick();
    const model = await expectError(await send("PUT", `${PERSONAS}/${made.id}`, alice.auth, { name: "Renamed", model: "gpt-9" }), 400, "invalid_request");
    expect(model.error.details.errors).toEqual([{ path: "/body/model", message: `must be one of: ${MODELS.join(", ")}` }]);
    for (const bad of [{ name: "" }, { name: "n".repeat(81) }, { voice_id: "robot" }, { category: "wizard" }, { is_public: 1 }, { greeting_message: "" }, { name: null }]) {
      await expectError(await send("PUT", `${PERSONAS}/${made.id}`, alice.auth, { description: "changed", ...bad }), 400, "invalid_request");
    }
    expect(await expectOk(get(alice, made.id))).toEqual(made);
  });

  it("answers 404 for an unknown id", async () => {
    await expectError(await send("PUT", `${PERSONAS}/${uuidv7()}`, alice.auth, { name: "X" }), 404, "not_found");
  });
});

describe("deleting a persona", () => {
  it("answers {id, deleted: true}, after which it is gone", async () => {
    const made = await create(alice);
    expect(await ok(await send("DELETE", `${PERSONAS}/${made.id}`, alice.auth))).toEqual({ id: made.id, deleted: true });
    await expectError(await get(alice, made.id), 404, "not_found");
    await expectError(await send("DELETE", `${PERSONAS}/${made.id}`, alice.auth), 404, "not_found");
  });

  it("deletes its conversations and their messages, and nothing of another persona", async () => {
    const { knex } = service.services.db;
    const doomed = await create(alice);
    const kept = await create(alice);
    const conversation = async (personaId: string) => {
      const id = uuidv7();
      await knex("conversations").insert({ id, user_id: bob.id, persona_id: personaId, title: null, message_count: 1, created_at: clock, updated_at: clock });
      await knex("messages").insert({ id: uuidv7(), conversation_id: id, user_id: bob.id, persona_id: personaId, role: "user", content: "Hi", created_at: clock });
      return id;
    };
    const gone = await conversation(doomed.id);
    const stays = await conversation(kept.id);

    await ok(await send("DELETE", `${PERSONAS}/${doomed.id}`, alice.auth));
    expect(await knex("conversations").where({ id: gone })).toEqual([]);
    expect(await knex("messages").where({ conversation_id: gone })).toEqual([]);
    expect(await knex("conversations").where({ id: stays })).toHaveLength(1);
    expect(await knex("messages").where({ conversation_id: stays })).toHaveLength(1);
  });
});

describe("listing one's personas", () => {
  let owner: TestUser;
  let made: (Json & { id: string })[];

  beforeAll(async () => {
    owner = await creator();
    made = [];
    // Three created in the same instant, so that only the id tiebreaker orders them.
    tick();
    for (const name of ["delta", "Bravo", "alpha"]) made.push(await create(owner, { name }));
    for (const name of ["Echo", "charlie", "Foxtrot", "bravo"]) {
      tick();
      made.push(await create(owner, { name }));
    }
    // Updating the oldest makes it the most recently updated.
    tick();
    made[0] = await ok(await send("PUT", `${PERSONAS}/${made[0]!.id}`, owner.auth, { description: "touched" }));
  });

  const ids = (rows: { id: string }[]) => rows.map((row) => row.id);
  // Code-point order, as the database compares ISO timestamps, UUIDs and (lower-cased) names.
  const cmp = (a: unknown, b: unknown) => (String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0);
  const byDesc = (key: "created_at" | "updated_at") => (a: Json, b: Json) => cmp(b[key], a[key]) || cmp(b.id, a.id);

  it("answers the caller's own personas only, newest first by default, with exactly the summary's fields", async () => {
    await create(bob);
    const body = await list(owner);
    expect(body).toMatchObject({ total: made.length, limit: 20, offset: 0 });
    expect(ids(body.data)).toEqual(ids([...made].sort(byDesc("created_at"))));
    expect(Object.keys(body.data[0]!).sort()).toEqual(
      ["id", "name", "description", "model", "avatar_url", "is_public", "category", "message_count", "content_rating", "created_at", "updated_at"].sort(),
    );
    const full = made.find((row) => row.id === body.data[0]!.id)!;
    const { instructions: _i, greeting_message: _g, voice_id: _v, creator_id: _c, allow_client_system_messages: _s, handle: _h, model_settings: _m, provider_connection_id: _p, ...summary } = full;
    expect(body.data[0]).toEqual(summary);
  });

  it("sorts by updated_at (newest first) and by name (A to Z, ignoring case), ties broken by id", async () => {
    expect(ids((await list(owner, { sort: "updated_at" })).data)).toEqual(ids([...made].sort(byDesc("updated_at"))));
    const byName = [...made].sort((a, b) => cmp(String(a.name).toLowerCase(), String(b.name).toLowerCase()) || cmp(a.id, b.id));
    expect((await list(owner, { sort: "name" })).data.map((row) => row.name)).toEqual(byName.map((row) => row.name));
    expect(ids((await list(owner, { sort: "name" })).data)).toEqual(ids(byName));
  });

  it("pages without repeating or skipping, in every order, with the same total on each page", async () => {
    for (const sort of ["created_at", "updated_at", "name"] as const) {
      const all = ids((await list(owner, { sort, limit: 100 })).data);
      const paged: string[] = [];
      for (let offset = 0; offset < made.length; offset += 2) {
        const page = await list(owner, { sort, limit: 2, offset });
        expect(page).toMatchObject({ total: made.length, limit: 2, offset });
        paged.push(...ids(page.data));
      }
      expect(paged).toEqual(all);
    }
  });

  it("answers an empty page past the end, with the total", async () => {
    expect(await list(owner, { offset: 50 })).toEqual({ data: [], total: made.length, limit: 20, offset: 50 });
  });

  it("accepts limit 1 and 100; refuses limit 0, 101, offset -1, non-numbers and unknown sorts or parameters", async () => {
    expect((await list(owner, { limit: 1 })).data).toHaveLength(1);
    expect((await list(owner, { limit: 100 })).data).toHaveLength(made.length);
    for (const query of ["?limit=0", "?limit=101", "?offset=-1", "?limit=ten", "?limit=1.5", "?sort=popular", "?creator_id=x"]) {
      await expectError(await service.fetch(`${PERSONAS}${query}`, { headers: owner.auth }), 400, "invalid_request");
    }
  });
});

describe("another user", () => {
  let secret: Json & { id: string };
  let shown: Json & { id: string };

  beforeAll(async () => {
    secret = await create(alice, { name: "Secret Diary", greeting_message: "Hush." });
    shown = await create(alice, { name: "Open Book", is_public: true, greeting_message: "Hello, reader." });
  });

  it("gets 404 for a private persona on every route", async () => {
    await expectError(await get(bob, secret.id), 404, "not_found");
    await expectError(await send("PUT", `${PERSONAS}/${secret.id}`, bob.auth, { name: "Mine now" }), 404, "not_found");
    await expectError(await send("DELETE", `${PERSONAS}/${secret.id}`, bob.auth), 404, "not_found");
    expect(await expectOk(get(alice, secret.id))).toEqual(secret);
  });

  it("sees a public persona without its instructions", async () => {
    expect(await expectOk(get(bob, shown.id))).toEqual({ ...shown, instructions: "" });
  });

  it("gets 403 for changing or deleting a public persona, which stays as it was", async () => {
    await expectError(await send("PUT", `${PERSONAS}/${shown.id}`, bob.auth, { name: "Mine now" }), 403, "forbidden");
    await expectError(await send("PUT", `${PERSONAS}/${shown.id}`, bob.auth, {}), 403, "forbidden");
    await expectError(await send("DELETE", `${PERSONAS}/${shown.id}`, bob.auth), 403, "forbidden");
    expect(await expectOk(get(alice, shown.id))).toEqual(shown);
  });

  it("gets 404 for a persona that became private, and does not list another user's personas", async () => {
    const made = await create(alice, { is_public: true });
    await ok(await send("PUT", `${PERSONAS}/${made.id}`, alice.auth, { is_public: false }));
    await expectError(await get(bob, made.id), 404, "not_found");
    const listed = (await list(bob, { limit: 100 })).data.map((row) => row.id);
    expect(listed).not.toContain(made.id);
    expect(listed).not.toContain(shown.id);
  });

  it("needs personas:write to change anything; personas:read reads", async () => {
    const key = { "x-api-key": await apiKeyFor(service, alice, ["personas:read"]) };
    expect((await expectOk(get({ auth: key }, secret.id))).instructions).toBe(secret.instructions);
    await list({ auth: key });
    await expectError(await send("POST", PERSONAS, key, NOVA), 403, "forbidden");
    await expectError(await send("PUT", `${PERSONAS}/${secret.id}`, key, { name: "X" }), 403, "forbidden");
    await expectError(await send("DELETE", `${PERSONAS}/${secret.id}`, key), 403, "forbidden");
    await expectError(await service.fetch(PERSONAS), 401, "unauthorized");
  });
});
