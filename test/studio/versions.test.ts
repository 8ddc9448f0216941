import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatModelProvider } from "../../server/toolkit/providers/llm/index.ts";
import { jsonHeaders, startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// Instruction versions: version 1 on create, a new active version on an instructions change through
// PUT, drafts, activation, gap-free numbering under concurrent creates, limits and other users.
let service: TestService;
let clock = new Date("2026-11-21T10:00:00.000Z");
let alice: TestUser;
let bob: TestUser;

const NOVA = { name: "Captain Nova", instructions: "You are Captain Nova." };
const quiet: ChatModelProvider = {
  name: "fake",
  complete: async (request) => ({ content: "Hello.", model: request.model, usage: { inputTokens: 1, outputTokens: 1 } }),
  // eslint-disable-next-line require-yield
  stream: async function* () {
    throw new Error("not used");
  },
};
const tick = (ms = 1000) => (clock = new Date(clock.getTime() + ms));
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

async function call(user: TestUser, method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const response = await service.fetch(path, { method, headers: { ...jsonHeaders, ...user.auth }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : {} };
}

async function persona(user: TestUser, fields: Json = {}): Promise<string> {
  const created = await call(user, "POST", "/v1/personas", { ...NOVA, ...fields });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.id;
}

beforeAll(async () => {
  service = await startTestService({ now: () => clock, providers: { llm: quiet }, env: { RATE_LIMIT_PER_MINUTE: "100000", AUTO_AVATARS: "false" } });
  alice = await registerUser(service);
  bob = await registerUser(service);
  for (const user of [alice, bob]) await service.services.db.knex("users").where({ id: user.id }).update({ plan: "creator" });
});

afterAll(async () => {
  await service?.close();
});

describe("instruction versions", () => {
  it("creating a persona makes version 1 active", async () => {
    const id = await persona(alice);
    const list = await call(alice, "GET", `/v1/studio/${id}/versions`);
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(1);
    expect(list.body.data[0]).toMatchObject({ version: 1, status: "active", instructions: NOVA.instructions, changelog: "" });
    expect(list.body.data[0].activated_at).toBe(clock.toISOString());
    expect(list.body.data[0]).not.toHaveProperty("deactivated_at");
  });

  it("a draft is numbered next and changes nothing live until activated", async () => {
    const id = await persona(alice);
    tick();
    const draft = await call(alice, "POST", `/v1/studio/${id}/versions`, { instructions: "Be brief.", changelog: "Shorter." });
    expect(draft.status).toBe(201);
    expect(draft.body).toMatchObject({ version: 2, status: "draft", instructions: "Be brief.", changelog: "Shorter.", activated_at: null });
    expect((await call(alice, "GET", `/v1/personas/${id}`)).body.instructions).toBe(NOVA.instructions);

    tick();
    const activated = await call(alice, "POST", `/v1/studio/${id}/versions/${draft.body.id}/activate`);
    expect(activated.status).toBe(200);
    expect(activated.body).toMatchObject({ id: draft.body.id, status: "active", activated_at: clock.toISOString() });
    expect((await call(alice, "GET", `/v1/personas/${id}`)).body.instructions).toBe("Be brief.");

    const list = (await call(alice, "GET", `/v1/studio/${id}/versions`)).body;
    expect(list.data.map((v: Json) => [v.version, v.status])).toEqual([[2, "active"], [1, "inactive"]]);
    expect(list.data[1].deactivated_at).toBe(clock.toISOString());

    // Activating the active version changes nothing; an older one comes back.
    tick();
    expect((await call(alice, "POST", `/v1/studio/${id}/versions/${draft.body.id}/activate`)).body.activated_at).toBe(activated.body.activated_at);
    const back = await call(alice, "POST", `/v1/studio/${id}/versions/${list.data[1].id}/activate`);
    expect(back.body).toMatchObject({ version: 1, status: "active", activated_at: clock.toISOString() });
    expect(back.body).not.toHaveProperty("deactivated_at");
    expect((await call(alice, "GET", `/v1/personas/${id}`)).body.instructions).toBe(NOVA.instructions);
  });

  it("an instructions change through PUT records a new active version; other changes do not", async () => {
    const id = await persona(alice);
    tick();
    expect((await call(alice, "PUT", `/v1/personas/${id}`, { name: "Nova" })).status).toBe(200);
    expect((await call(alice, "PUT", `/v1/personas/${id}`, { instructions: NOVA.instructions })).status).toBe(200);
    expect((await call(alice, "GET", `/v1/studio/${id}/versions`)).body.total).toBe(1);
    expect((await call(alice, "PUT", `/v1/personas/${id}`, { instructions: "Speak like a pirate." })).status).toBe(200);
    const list = (await call(alice, "GET", `/v1/studio/${id}/versions`)).body;
    expect(list.data.map((v: Json) => [v.version, v.status, v.instructions])).toEqual([
      [2, "active", "Speak like a pirate."],
      [1, "inactive", NOVA.instructions],
    ]);
  });

  it("numbers concurrent creates without gaps or duplicates", async () => {
    const id = await persona(alice);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => call(alice, "POST", `/v1/studio/${id}/versions`, { instructions: `Draft ${i}` })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(201));
    expect(results.map((r) => r.body.version).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 2));
  });

  it("concurrent activations leave exactly one active version", async () => {
    const id = await persona(alice);
    const drafts = await Promise.all([1, 2, 3, 4, 5].map((i) => call(alice, "POST", `/v1/studio/${id}/versions`, { instructions: `Take ${i}` })));
    const results = await Promise.all(drafts.map((d) => call(alice, "POST", `/v1/studio/${id}/versions/${d.body.id}/activate`)));
    expect(results.map((r) => r.status)).toEqual(Array(5).fill(200));
    const list = (await call(alice, "GET", `/v1/studio/${id}/versions`)).body;
    const active = list.data.filter((v: Json) => v.status === "active");
    expect(active).toHaveLength(1);
    expect((await call(alice, "GET", `/v1/personas/${id}`)).body.instructions).toBe(active[0].instructions);
  });

  it("refuses bad input and writes nothing", async () => {
    const id = await persona(alice);
    for (const body of [{}, { instructions: "" }, { instructions: "x".repeat(32001) }, { instructions: "ok", changelog: "x".repeat(501) }, { instructions: 5 }]) {
      const response = await call(alice, "POST", `/v1/studio/${id}/versions`, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
    }
    expect((await call(alice, "POST", `/v1/studio/${id}/versions`, { instructions: "x".repeat(32000), changelog: "y".repeat(500) })).status).toBe(201);
    expect((await call(alice, "GET", `/v1/studio/${id}/versions`)).body.total).toBe(2);
  });

  it("another user's persona, an unknown persona and an unknown version are 404; a malformed id 400", async () => {
    const id = await persona(alice, { is_public: true });
    const v1 = (await call(alice, "GET", `/v1/studio/${id}/versions`)).body.data[0].id;
    expect((await call(bob, "GET", `/v1/studio/${id}/versions`)).status).toBe(404);
    expect((await call(bob, "POST", `/v1/studio/${id}/versions`, { instructions: "Mine now." })).status).toBe(404);
    expect((await call(bob, "POST", `/v1/studio/${id}/versions/${v1}/activate`)).status).toBe(404);
    expect((await call(alice, "GET", `/v1/studio/0193a6c4-7b20-7d11-8e2f-3a4b5c6d7e02/versions`)).status).toBe(404);
    expect((await call(alice, "POST", `/v1/studio/${id}/versions/0193a6c4-7b20-7d11-8e2f-3a4b5c6d7e02/activate`)).status).toBe(404);
    // A malformed version id fails the contract (every id is a UUID): 400, not 404.
    expect((await call(alice, "POST", `/v1/studio/${id}/versions/not-a-version/activate`)).status).toBe(400);
    // Bob's version id under Alice's persona is unknown there.
    const bobs = await persona(bob);
    const bobV1 = (await call(bob, "GET", `/v1/studio/${bobs}/versions`)).body.data[0].id;
    expect((await call(alice, "POST", `/v1/studio/${id}/versions/${bobV1}/activate`)).status).toBe(404);
    expect((await call(alice, "GET", `/v1/studio/${id}/versions`)).body.total).toBe(1);
  });
});
