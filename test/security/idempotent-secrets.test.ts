import { createHash, randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonHeaders, startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// Issue 31 L3: a stored idempotent answer that holds a secret (a new account's tokens, a new API
// key, a webhook's signing secret) is kept encrypted, and a retry with the same Idempotency-Key still
// gets the first answer back, secret included: a client that lost the answer must be able to recover it.
let service: TestService;
let user: TestUser;

beforeAll(async () => {
  service = await startTestService({ env: { WEBHOOKS_ALLOW_PRIVATE_URLS: "true" } });
  user = await registerUser(service);
});

afterAll(async () => {
  await service?.close();
});

async function twice(path: string, body: unknown, headers: Record<string, string> = {}) {
  const key = randomUUID();
  const send = () => service.fetch(path, { method: "POST", headers: { ...jsonHeaders, ...headers, "idempotency-key": key }, body: JSON.stringify(body) });
  const first = await send();
  const firstBody = await first.json();
  expect(first.status, JSON.stringify(firstBody)).toBe(201);
  const row = await service.services.db.knex("idempotency_keys").where({ key }).first();
  expect(row?.state).toBe("done");
  const replay = await send();
  return { firstBody, row: row as Record<string, unknown>, replay, replayBody: await replay.json() };
}

function expectNoneIn(row: Record<string, unknown>, secrets: string[]) {
  const stored = JSON.stringify(row);
  for (const secret of secrets) {
    expect(secret.length).toBeGreaterThan(8);
    expect(stored.includes(secret), `the stored row holds ${secret.slice(0, 6)}…`).toBe(false);
  }
}

describe("idempotent answers with secrets (issue 31 L3)", () => {
  it("POST /v1/auth/register: the row holds neither the tokens nor the password, nor an unkeyed hash of it; a replay answers the same", async () => {
    const suffix = randomBytes(4).toString("hex");
    const input = { email: `idem_${suffix}@example.com`, username: `idem_${suffix}`, password: `Idem-pass-${suffix}` };
    const { firstBody, row, replay, replayBody } = await twice("/v1/auth/register", input);
    expectNoneIn(row, [firstBody.access_token, firstBody.refresh_token, input.password]);
    // A plain SHA-256 of the request would let whoever reads the table test password guesses offline.
    const unkeyed = createHash("sha256").update(`POST /v1/auth/register\n${JSON.stringify(input)}`).digest("hex");
    expect(row.request_hash).not.toBe(unkeyed);
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replayBody).toEqual(firstBody);
  });

  it("POST /v1/auth/api-keys: the row does not hold the key; a replay answers the same key", async () => {
    const { firstBody, row, replay, replayBody } = await twice("/v1/auth/api-keys", { name: "idem", scopes: ["admin"] }, user.auth);
    expect(firstBody.key).toMatch(/^pk_/);
    expectNoneIn(row, [firstBody.key]);
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replayBody).toEqual(firstBody);
    expect((await service.fetch("/v1/auth/me", { headers: { "x-api-key": replayBody.key } })).status).toBe(200);
  });

  it("POST /v1/webhooks: the row does not hold the signing secret; a replay answers the same secret", async () => {
    const { firstBody, row, replay, replayBody } = await twice("/v1/webhooks", { url: "http://127.0.0.1:9/idem", events: ["message.created"] }, user.auth);
    expect(firstBody.secret).toMatch(/^whsec_/);
    expectNoneIn(row, [firstBody.secret, firstBody.secret.slice("whsec_".length)]);
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replayBody).toEqual(firstBody);
  });

  it("answers 409 when the stored answer can no longer be opened (SECRETS_KEY changed), never 500", async () => {
    const { row } = await twice("/v1/auth/api-keys", { name: "unreadable", scopes: ["admin"] }, user.auth);
    await service.services.db.knex("idempotency_keys").where({ scope: row.scope, key: row.key }).update({ response_sealed: "v1.c2VhbGVkIHdpdGggYW5vdGhlciBrZXk" });
    const replay = await service.fetch("/v1/auth/api-keys", {
      method: "POST",
      headers: { ...jsonHeaders, ...user.auth, "idempotency-key": row.key as string },
      body: JSON.stringify({ name: "unreadable", scopes: ["admin"] }),
    });
    expect(replay.status).toBe(409);
    expect((await replay.json()).error.code).toBe("conflict");
  });
});
