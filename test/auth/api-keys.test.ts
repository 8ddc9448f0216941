import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handlers } from "../../server/areas/auth/api-keys/handlers.ts";
import { ApiError } from "../../server/toolkit/http/errors.ts";
import type { HandlerContext } from "../../server/toolkit/http/router.ts";
import type { Schemas } from "../../sdk/src/types.ts";
import type { ApiAnswer } from "../support/api.ts";
import { sendRaw } from "../support/raw.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// API keys: both creation forms, list, revoke, and what a key can do right after each of those.
let service: TestService;
const start = new Date("2026-11-21T10:00:00.000Z");
let clock = start;
let alice: TestUser;
let bob: TestUser;

const DAY_MS = 24 * 60 * 60 * 1000;
const FINE = "/v1/auth/api-keys";
const SIMPLE = "/v1/api-keys";

beforeAll(async () => {
  service = await startTestService({ now: () => clock });
  alice = await registerUser(service);
  bob = await registerUser(service);
});

afterAll(async () => {
  await service?.close();
});

type Auth = Record<string, string>;

/** Creates a key of the fine-grained form (`POST /v1/auth/api-keys`). */
const createFine = (auth: Auth, body: Schemas["ApiKeyCreate"], headers: Record<string, string> = {}) =>
  service.clientFor({ auth }).POST(FINE, { body, headers });
/** Creates a key of the alternative form (`POST /v1/api-keys`). */
const createSimple = (auth: Auth, body: Schemas["SimpleApiKeyCreate"]) => service.clientFor({ auth }).POST(SIMPLE, { body });

const list = (auth: Auth) => service.fetch(FINE, { headers: auth });
const revoke = (auth: Auth, id: string) => service.fetch(`${FINE}/${encodeURIComponent(id)}`, { method: "DELETE", headers: auth });
const withKey = (key: string): Auth => ({ "x-api-key": key });

async function listed(user: TestUser): Promise<{ id: string; name: string; key_hint: string; scopes: string[]; last_used_at: string | null; expires_at: string | null }[]> {
  const response = await list(user.auth);
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(200);
  return body.data;
}

/** Creates a key of the fine form and answers the 201 body. */
async function newKey(user: TestUser, scopes: Schemas["ApiKeyScope"][] = ["admin"], extra: Partial<Schemas["ApiKeyCreate"]> = {}) {
  const { data, error, response } = await createFine(user.auth, { name: "k", scopes, ...extra });
  expect(response.status, JSON.stringify(error ?? data)).toBe(201);
  return data!;
}

async function expectError(answer: Response | ApiAnswer, status: number, code: string) {
  const [actual, body] = answer instanceof Response ? [answer.status, await answer.json()] : [answer.response.status, answer.error ?? answer.data];
  expect(actual, JSON.stringify(body)).toBe(status);
  expect(body.error.code).toBe(code);
  return body;
}

describe("creating a key", () => {
  it("answers 201 with the full key once, in the fine-grained form", async () => {
    const { data: body, error, response } = await createFine(alice.auth, { name: "Stargazing class bot", scopes: ["personas:read", "conversations:write"] });
    expect(response.status, JSON.stringify(error ?? body)).toBe(201);
    expect(body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: "Stargazing class bot",
      key: expect.stringMatching(/^pk_[0-9A-Za-z]{43}$/),
      scopes: ["personas:read", "conversations:write"],
      created_at: start.toISOString(),
      last_used_at: null,
      expires_at: null,
    });
  });

  it("answers 201 in the alternative form, with expires_at now + expires_in_days", async () => {
    const { data: body, error, response } = await createSimple(alice.auth, { name: "Nightly backup script", scopes: ["read"], expires_in_days: 90 });
    expect(response.status, JSON.stringify(error ?? body)).toBe(201);
    expect(body).toEqual({
      id: expect.any(String),
      name: "Nightly backup script",
      key: expect.stringMatching(/^pk_[0-9A-Za-z]{43}$/),
      scopes: ["read"],
      created_at: start.toISOString(),
      expires_at: new Date(start.getTime() + 90 * DAY_MS).toISOString(),
    });
    expect(body).not.toHaveProperty("last_used_at");
  });

  it("accepts the limits themselves: a 100-character name, 3650 days, every scope of each form", async () => {
    const fine = await newKey(alice, ["personas:read", "personas:write", "conversations:read", "conversations:write", "voice", "admin"], {
      name: "n".repeat(100),
      expires_in_days: 3650,
    });
    expect(fine.expires_at).toBe(new Date(start.getTime() + 3650 * DAY_MS).toISOString());
    const { data, response } = await createSimple(alice.auth, { name: "é".repeat(100), scopes: ["read", "chat", "admin"], expires_in_days: 1 });
    expect(response.status).toBe(201);
    expect(data!.expires_at).toBe(new Date(start.getTime() + DAY_MS).toISOString());
  });

  it("gives a key that works at once, in X-API-Key and in Authorization: Bearer", async () => {
    const { key } = await newKey(alice);
    expect((await list(withKey(key))).status).toBe(200);
    expect((await list({ authorization: `Bearer ${key}` })).status).toBe(200);
  });

  it("needs the admin scope: a key without it gets 403 and nothing is created", async () => {
    const before = await listed(alice);
    const { key: readKey } = (await createSimple(alice.auth, { name: "reader", scopes: ["read"] })).data!;
    const { key: writeKey } = await newKey(alice, ["personas:write", "conversations:write", "voice"]);
    await expectError(await createFine(withKey(readKey), { name: "escalate", scopes: ["admin"] }), 403, "forbidden");
    await expectError(await createSimple(withKey(readKey), { name: "escalate", scopes: ["admin"] }), 403, "forbidden");
    await expectError(await createSimple(withKey(writeKey), { name: "escalate", scopes: ["read"] }), 403, "forbidden");
    // Listing and revoking are account operations too.
    await expectError(await list(withKey(readKey)), 403, "forbidden");
    expect((await listed(alice)).length).toBe(before.length + 2);
  });

  it("lets a key with admin create another key", async () => {
    const { key } = await newKey(alice, ["admin"]);
    const { response } = await createSimple(withKey(key), { name: "minted by a key", scopes: ["chat"] });
    expect(response.status).toBe(201);
  });

  it("replays the same key for a retry with the same Idempotency-Key, creating only one", async () => {
    const before = await listed(alice);
    const headers = { "idempotency-key": randomUUID() };
    const first = await createFine(alice.auth, { name: "retried", scopes: ["voice"] }, headers);
    const second = await createFine(alice.auth, { name: "retried", scopes: ["voice"] }, headers);
    expect(first.response.status).toBe(201);
    expect(second.response.status).toBe(201);
    expect(second.response.headers.get("idempotent-replayed")).toBe("true");
    const a = first.data!;
    expect(second.data).toEqual(a);
    const after = await listed(alice);
    expect(after.length).toBe(before.length + 1);
    expect(after.filter((k) => k.id === a.id)).toHaveLength(1);
  });
});

describe("bad input", () => {
  const cases: [string, string, unknown][] = [
    ["fine form with an alternative scope", FINE, { name: "x", scopes: ["read"] }],
    ["alternative form with a fine scope", SIMPLE, { name: "x", scopes: ["personas:read"] }],
    ["fine form with an unknown scope", FINE, { name: "x", scopes: ["everything"] }],
    ["alternative form with an unknown scope", SIMPLE, { name: "x", scopes: ["write"] }],
    ["fine form with no scopes", FINE, { name: "x", scopes: [] }],
    ["alternative form with no scopes", SIMPLE, { name: "x", scopes: [] }],
    ["fine form without scopes", FINE, { name: "x" }],
    ["fine form with a repeated scope", FINE, { name: "x", scopes: ["voice", "voice"] }],
    ["alternative form with a repeated scope", SIMPLE, { name: "x", scopes: ["read", "chat", "read"] }],
    ["fine form without a name", FINE, { scopes: ["voice"] }],
    ["alternative form without a name", SIMPLE, { scopes: ["read"] }],
    ["an empty name", FINE, { name: "", scopes: ["voice"] }],
    ["a name over 100 characters", FINE, { name: "n".repeat(101), scopes: ["voice"] }],
    ["a name over 100 characters (alternative form)", SIMPLE, { name: "n".repeat(101), scopes: ["read"] }],
    ["expires_in_days 0", FINE, { name: "x", scopes: ["voice"], expires_in_days: 0 }],
    ["expires_in_days 3651", FINE, { name: "x", scopes: ["voice"], expires_in_days: 3651 }],
    ["expires_in_days 1.5", FINE, { name: "x", scopes: ["voice"], expires_in_days: 1.5 }],
    ["expires_in_days 0 (alternative form)", SIMPLE, { name: "x", scopes: ["read"], expires_in_days: 0 }],
    ["expires_in_days 3651 (alternative form)", SIMPLE, { name: "x", scopes: ["read"], expires_in_days: 3651 }],
    ["expires_in_days 1.5 (alternative form)", SIMPLE, { name: "x", scopes: ["read"], expires_in_days: 1.5 }],
    ["expires_in_days null", SIMPLE, { name: "x", scopes: ["read"], expires_in_days: null }],
  ];

  // Bodies the contract refuses, most of them refused by its types too: sent raw.
  it.each(cases)("rejects %s with 400 and writes nothing", async (_label, path, body) => {
    const before = await listed(alice);
    const error = await expectError(await sendRaw(service, "POST", path, { body, headers: alice.auth }), 400, "invalid_request");
    expect(error.error.details.errors.length).toBeGreaterThan(0);
    expect(await listed(alice)).toEqual(before);
  });

  // The validator coerces `7` to "7" and "30" to 30 before a handler sees them (coerceTypes); the
  // handlers' own rules still refuse such input from any other caller, with nothing written.
  it.each([
    ["a name that is not a string", { name: 7, scopes: ["voice"] }],
    ["expires_in_days as a string", { name: "x", scopes: ["voice"], expires_in_days: "30" }],
    ["expires_in_days 1.5", { name: "x", scopes: ["voice"], expires_in_days: 1.5 }],
    ["a repeated scope", { name: "x", scopes: ["voice", "voice"] }],
    ["no scopes", { name: "x", scopes: [] }],
    ["a scope of the other form", { name: "x", scopes: ["read"] }],
    ["a 101-character name", { name: "n".repeat(101), scopes: ["voice"] }],
  ])("refuses %s in the handler's own rules too", async (_label, body) => {
    const before = await listed(alice);
    const ctx = { services: service.services, principal: { userId: alice.id, kind: "session", scopes: "all" }, body };
    const call = handlers.api_keys_create(ctx as unknown as HandlerContext<"api_keys_create">);
    await expect(call).rejects.toBeInstanceOf(ApiError);
    await expect(call).rejects.toMatchObject({ status: 400, code: "invalid_request" });
    const simple = handlers.api_keys_create_simple({ ...ctx, body: { ...body, scopes: ["admin", "admin"] } } as unknown as HandlerContext<"api_keys_create_simple">);
    await expect(simple).rejects.toMatchObject({ status: 400, code: "invalid_request" });
    expect(await listed(alice)).toEqual(before);
  });

  it("rejects a request without credentials with 401", async () => {
    await expectError(await createFine({}, { name: "x", scopes: ["voice"] }), 401, "unauthorized");
    await expectError(await createSimple(withKey("pk_notarealkey"), { name: "x", scopes: ["read"] }), 401, "unauthorized");
  });
});

describe("listing keys", () => {
  it("shows the caller's keys of both forms, newest first, with key_hint and never the key", async () => {
    const carol = await registerUser(service);
    const first = await newKey(carol, ["personas:read"]);
    clock = new Date(start.getTime() + 1000);
    try {
      const second = (await createSimple(carol.auth, { name: "second", scopes: ["chat"], expires_in_days: 7 })).data!;
      const response2 = await list(carol.auth);
      const raw = await response2.text();
      const keys = JSON.parse(raw).data;
      expect(keys.map((k: { id: string }) => k.id)).toEqual([second.id, first.id]);
      expect(keys[0]).toEqual({
        id: second.id,
        name: "second",
        key_hint: `pk_…${second.key.slice(-4)}`,
        scopes: ["chat"],
        created_at: clock.toISOString(),
        last_used_at: null,
        expires_at: new Date(clock.getTime() + 7 * DAY_MS).toISOString(),
      });
      expect(keys[1].key_hint).toBe(`pk_…${first.key.slice(-4)}`);
      for (const key of keys) expect(key).not.toHaveProperty("key");
      expect(raw).not.toContain(first.key);
      expect(raw).not.toContain(second.key);
    } finally {
      clock = start;
    }
  });

  it("records last_used_at once a key is used", async () => {
    const { id, key } = await newKey(alice);
    expect((await listed(alice)).find((k) => k.id === id)!.last_used_at).toBeNull();
    expect((await list(withKey(key))).status).toBe(200);
    expect((await listed(alice)).find((k) => k.id === id)!.last_used_at).toBe(start.toISOString());
  });

  it("shows another user nothing of the caller's keys", async () => {
    const { id } = await newKey(alice);
    const dave = await registerUser(service);
    expect(await listed(dave)).toEqual([]);
    const mine = await newKey(bob);
    const bobs = await listed(bob);
    expect(bobs.map((k) => k.id)).toContain(mine.id);
    expect(bobs.map((k) => k.id)).not.toContain(id);
  });
});

describe("revoking a key", () => {
  it("answers {message, id, revoked_at}; the key answers 401 on the very next request and leaves the list", async () => {
    const { id, key } = await newKey(alice);
    expect((await list(withKey(key))).status).toBe(200);
    const response = await revoke(alice.auth, id);
    const body = await response.json();
    expect(response.status, JSON.stringify(body)).toBe(200);
    expect(body).toEqual({ message: "API key revoked.", id, revoked_at: start.toISOString() });
    await expectError(await list(withKey(key)), 401, "unauthorized");
    await expectError(await list({ authorization: `Bearer ${key}` }), 401, "unauthorized");
    expect((await listed(alice)).map((k) => k.id)).not.toContain(id);
  });

  it("answers 404 when the key is already revoked", async () => {
    const { id } = await newKey(alice);
    expect((await revoke(alice.auth, id)).status).toBe(200);
    await expectError(await revoke(alice.auth, id), 404, "not_found");
  });

  it("lets a key revoke itself", async () => {
    const { id, key } = await newKey(alice);
    expect((await revoke(withKey(key), id)).status).toBe(200);
    await expectError(await list(withKey(key)), 401, "unauthorized");
  });

  it("answers 404 for an unknown id and 400 for one that is not a UUID", async () => {
    await expectError(await revoke(alice.auth, randomUUID()), 404, "not_found");
    const malformed = await expectError(await revoke(alice.auth, "not-a-uuid"), 400, "invalid_request");
    expect(malformed.error.details.errors[0].path).toBe("/params/id");
  });

  it("answers 404 for another user's key, which keeps working", async () => {
    const { id, key } = await newKey(alice);
    await expectError(await revoke(bob.auth, id), 404, "not_found");
    const bobsKey = await newKey(bob);
    await expectError(await revoke(withKey(bobsKey.key), id), 404, "not_found");
    expect((await list(withKey(key))).status).toBe(200);
    expect((await listed(alice)).map((k) => k.id)).toContain(id);
  });
});

describe("an expiring key", () => {
  it("works until expires_at and answers 401 from then on; it leaves the list and cannot be revoked", async () => {
    const { id, key, expires_at } = await newKey(alice, ["admin"], { expires_in_days: 1 });
    expect(expires_at).toBe(new Date(start.getTime() + DAY_MS).toISOString());
    // Session tokens last an hour: a permanent key looks at the list once the clock has moved.
    const { key: permanent } = await newKey(alice, ["admin"]);
    try {
      clock = new Date(start.getTime() + DAY_MS - 1);
      expect((await list(withKey(key))).status).toBe(200);
      clock = new Date(start.getTime() + DAY_MS);
      await expectError(await list(withKey(key)), 401, "unauthorized");
      await expectError(await createSimple({ authorization: `Bearer ${key}` }, { name: "x", scopes: ["read"] }), 401, "unauthorized");
      const response = await list(withKey(permanent));
      const body = await response.json();
      expect(response.status).toBe(200);
      expect(body.data.map((k: { id: string }) => k.id)).not.toContain(id);
      await expectError(await revoke(withKey(permanent), id), 404, "not_found");
    } finally {
      clock = start;
    }
  });
});
