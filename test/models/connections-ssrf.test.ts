import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useHostResolver, type ResolvedAddress } from "../../server/toolkit/providers/address-guard.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { createConversation, createPersona, sendBlocking } from "../support/chat.ts";
import { databaseKind } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { chatCalls, personaOnConnection, startModelsWorld, type ModelsWorld } from "./support.ts";

// Issue 40, item 4: a user's provider connection is checked by the SSRF guard unless the operator
// allows private addresses (here they are not): at registration, and at every connection a reply
// makes (a name that changes its answer, a stored IP literal). Names resolve through a stub: nothing
// is looked up. The operator can also turn connections off.
const names: Record<string, string[]> = {
  "public.example": ["93.184.216.34"],
  "private.example": ["10.1.2.3"],
  "mixed.example": ["93.184.216.34", "127.0.0.1"],
};
const asked: string[] = [];
const stub = async (hostname: string): Promise<ResolvedAddress[]> => {
  asked.push(hostname);
  const found = names[hostname];
  if (!found) throw Object.assign(new Error(`stub: ${hostname} unknown`), { code: "ENOTFOUND" });
  return found.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
};

let world: ModelsWorld;
let own: FakeOpenAI;
let alice: TestUser;
let restore: () => void;

beforeAll(async () => {
  restore = useHostResolver(stub);
  own = await startFakeOpenAI();
  world = await startModelsWorld();
  alice = await registerUser(world.service);
});

afterAll(async () => {
  restore?.();
  await world?.close();
  await own?.close();
});

const api = (user: TestUser) => world.service.clientFor(user);

describe(`provider connections and private addresses (${databaseKind})`, () => {
  it("refuses at registration a URL that is not HTTPS or reaches a loopback, private or unknown address", async () => {
    for (const [url, problem] of [
      [own.baseUrl, "must be an HTTPS URL"],
      ["https://127.0.0.1:9/v1", "must not point to a loopback, private or link-local address"],
      ["https://private.example/v1", "must not point to a loopback, private or link-local address"],
      ["https://mixed.example/v1", "must not point to a loopback, private or link-local address"],
      ["https://nowhere.example/v1", "host nowhere.example does not resolve"],
    ] as const) {
      const answer = await api(alice).POST("/v1/provider-connections", { body: { name: "x", base_url: url, api_key: "sk-x-000000000000" } });
      expect(answer.response.status, url).toBe(400);
      const error = (answer.error as { error: { details: { errors: { path: string; message: string }[] } } }).error.details.errors[0]!;
      expect(error.path).toBe("/body/base_url");
      expect(error.message).toContain(problem);
    }
    const fine = await api(alice).POST("/v1/provider-connections", { body: { name: "public", base_url: "https://public.example/v1" } });
    expect(fine.response.status).toBe(201);
  });

  it("refuses a reply on a connection that now reaches a private address, before any request leaves", async () => {
    const knex = world.service.services.db.knex;
    // Registered while the name was public; it now answers loopback (DNS rebinding).
    names["rebind.example"] = ["93.184.216.34"];
    const rebinding = await api(alice).POST("/v1/provider-connections", { body: { name: "Rebinding", base_url: "https://rebind.example/v1", api_key: "sk-rebind-0000000000" } });
    expect(rebinding.response.status).toBe(201);
    names["rebind.example"] = ["127.0.0.1"];
    const persona = await personaOnConnection(world.service, alice, rebinding.data!.id, { name: "Rebound" });
    const conversation = await createConversation(world.service, alice, persona.id, "rebinding");
    asked.length = 0;
    const answer = await sendBlocking(world.service, alice, conversation.id, "Hi");
    expect(answer.status).toBe(502);
    expect((await answer.json()).error.message).toBe("Could not reach the provider connection `Rebinding`");
    expect(asked).toContain("rebind.example");

    // A stored IP literal (registered while the operator allowed private addresses) is refused by the guard too.
    const literal = randomUUID();
    const now = new Date();
    await knex("provider_connections").insert({ id: literal, user_id: alice.id, name: "Loopback", base_url: own.baseUrl, is_default: false, created_at: now, updated_at: now });
    await knex("personas").where({ id: persona.id }).update({ provider_connection_id: literal });
    const refused = await sendBlocking(world.service, alice, conversation.id, "Hi again");
    expect(refused.status).toBe(502);
    expect((await refused.json()).error.message).toMatch(/^The provider connection `Loopback` points at an address that is not allowed \(127\.0\.0\.1 is a loopback address\)/);
    expect(chatCalls(own)).toHaveLength(0);
  });
});

describe(`provider connections turned off (${databaseKind})`, () => {
  let off: ModelsWorld;
  let bob: TestUser;

  beforeAll(async () => {
    off = await startModelsWorld({ PROVIDER_CONNECTIONS: "false" });
    bob = await registerUser(off.service);
  });

  afterAll(async () => {
    await off?.close();
  });

  it("answers 503 to every connection operation, refuses a persona naming one, and runs replies on the registry's models", async () => {
    const client = off.service.clientFor(bob);
    const created = await client.POST("/v1/provider-connections", { body: { name: "x", base_url: "https://public.example/v1" } });
    expect(created.response.status).toBe(503);
    expect(created.error).toMatchObject({ error: { code: "provider_unavailable" } });
    expect((await client.GET("/v1/provider-connections")).response.status).toBe(503);
    const id = randomUUID();
    expect((await client.GET("/v1/provider-connections/{id}", { params: { path: { id } } })).response.status).toBe(503);
    const plain = await createPersona(off.service, bob, { name: "Plain" });
    const named = await client.PUT("/v1/personas/{id}", { params: { path: { id: plain.id } }, body: { provider_connection_id: id } });
    expect(named.response.status).toBe(400);

    // A default connection stored before the feature was turned off is left alone.
    const now = new Date();
    await off.service.services.db.knex("provider_connections").insert({ id, user_id: bob.id, name: "Dormant", base_url: own.baseUrl, is_default: true, created_at: now, updated_at: now });
    const persona = await createPersona(off.service, bob, { name: "Registry only", model: "beta" });
    const conversation = await createConversation(off.service, bob, persona.id, "off");
    own.reset();
    expect((await sendBlocking(off.service, bob, conversation.id, "Hi")).status).toBe(201);
    expect(chatCalls(off.second)).toHaveLength(1);
    expect(chatCalls(own)).toHaveLength(0);
  });
});
