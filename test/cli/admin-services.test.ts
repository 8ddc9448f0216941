import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { openServices } from "../../server/admin-runtime.ts";
import { listAccounts, listOAuthClients, registerOAuthClient, removeOAuthClient, setAccountPlan } from "../../server/areas/auth/index.ts";
import { startSession } from "../../server/areas/auth/sessions/service.ts";
import { feature, unfeature } from "../../server/areas/marketplace/index.ts";
import { createLogger } from "../../server/toolkit/logger.ts";
import { newApiKey, sha256 } from "../../server/toolkit/tokens.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// The areas' operator functions the admin commands call (`persona users`, `oauth-clients`,
// `marketplace feature`): the rules a request would meet hold for them too.
let service: TestService;
let user: TestUser;

beforeAll(async () => {
  service = await startTestService();
  user = await registerUser(service);
});

afterAll(async () => {
  await service?.close();
});

const get = (path: string, headers: Record<string, string>) => service.fetch(path, { headers });

describe("removing an OAuth client", () => {
  it("revokes the grants users gave it and the keys minted through them, and announces it", async () => {
    const client = await registerOAuthClient(service.services, { name: "Removed app", redirectUris: ["https://app.example/cb"] });
    const grant = await startSession(service.services, user.id, { clientId: client.client_id, scopes: ["personas:read"] });
    const { key, hint } = newApiKey();
    const keyId = randomUUID();
    await service.services.db.knex("api_keys").insert({
      id: keyId, user_id: user.id, grant_session_id: grant.sessionId, name: "minted by the app", key_hash: sha256(key), key_hint: hint, scopes: ["personas:read"], created_at: new Date(),
    });
    const asApp = { authorization: `Bearer ${grant.access_token}` };
    const asKey = { "x-api-key": key };
    // Used once, so that both sit in the credential cache: only an announcement drops them at once.
    expect((await get("/v1/personas", asApp)).status).toBe(200);
    expect((await get("/v1/personas", asKey)).status).toBe(200);

    const notify = vi.spyOn(service.services.db.notifications, "notify");
    try {
      expect(await removeOAuthClient(service.services, client.client_id)).toBe(true);
      const announced = notify.mock.calls.filter(([channel]) => channel === "credentials_revoked").map(([, payload]) => JSON.parse(payload) as unknown);
      expect(announced).toEqual(expect.arrayContaining([{ sessionId: grant.sessionId }, { apiKeyId: keyId }]));
    } finally {
      notify.mockRestore();
    }
    expect((await get("/v1/personas", asApp)).status).toBe(401);
    expect((await get("/v1/personas", asKey)).status).toBe(401);
    expect((await get("/v1/personas", user.auth)).status).toBe(200);
    expect((await listOAuthClients(service.services)).map((c) => c.client_id)).not.toContain(client.client_id);
    expect(await removeOAuthClient(service.services, client.client_id)).toBe(false);
  });
});

describe("plans", () => {
  it("refuses a plan the contract does not name before touching the account", async () => {
    await expect(setAccountPlan(service.services, user.email, "platinum")).rejects.toMatchObject({ status: 400, code: "invalid_request" });
    await expect(listAccounts(service.services, { plan: "platinum", limit: 5 })).rejects.toMatchObject({ status: 400 });
    expect((await listAccounts(service.services, { limit: 50 })).find((a) => a.id === user.id)?.plan).toBe("free");
    expect(await setAccountPlan(service.services, "nobody@example.com", "pro")).toBeUndefined();
  });
});

describe("the operator runtime", () => {
  it("opens the service's database without listener, worker or job queue, and calls the areas through it", async () => {
    const config = { ...service.services.config, databaseUrl: service.services.db.url };
    const admin = await openServices(config, createLogger({ ...config, logLevel: "silent" }));
    try {
      expect(admin.health.worker).toBe("disabled");
      const account = await setAccountPlan(admin, user.username.toUpperCase(), "plus");
      expect(account).toMatchObject({ id: user.id, plan: "plus", created_at: expect.stringMatching(/Z$/) });
      expect((await listAccounts(admin, { plan: "plus", limit: 50 })).map((a) => a.id)).toContain(user.id);
      // A marketplace listing id that does not exist: false, not an error.
      expect(await feature(admin, randomUUID(), "Staff pick")).toBe(false);
      expect(await unfeature(admin, "not-a-uuid")).toBe(false);
    } finally {
      await admin.close();
    }
    await setAccountPlan(service.services, user.id, "free");
  });
});
