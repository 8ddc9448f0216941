import { createHash, randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiAnswer } from "../support/api.ts";
import { startTestService, type TestService } from "../support/service.ts";
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

/** Sends the operation twice with one Idempotency-Key (`send` puts `headers` on its call). */
async function twice<A extends ApiAnswer>(send: (headers: { "idempotency-key": string }) => Promise<A>) {
  const key = randomUUID();
  const first = await send({ "idempotency-key": key });
  expect(first.response.status, JSON.stringify(first.error ?? first.data)).toBe(201);
  const firstBody = first.data as NonNullable<A["data"]>;
  const row = await service.services.db.knex("idempotency_keys").where({ key }).first();
  expect(row?.state).toBe("done");
  const replay = await send({ "idempotency-key": key });
  return { firstBody, row: row as Record<string, unknown>, replay: replay.response, replayBody: replay.data as NonNullable<A["data"]> };
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
    const { firstBody, row, replay, replayBody } = await twice((headers) => service.api.POST("/v1/auth/register", { body: input, headers }));
    expectNoneIn(row, [firstBody.access_token, firstBody.refresh_token, input.password]);
    // A plain SHA-256 of the request would let whoever reads the table test password guesses offline.
    const unkeyed = createHash("sha256").update(`POST /v1/auth/register\n${JSON.stringify(input)}`).digest("hex");
    expect(row.request_hash).not.toBe(unkeyed);
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replayBody).toEqual(firstBody);
  });

  it("POST /v1/auth/api-keys: the row does not hold the key; a replay answers the same key", async () => {
    const { firstBody, row, replay, replayBody } = await twice((headers) => service.clientFor(user).POST("/v1/auth/api-keys", { body: { name: "idem", scopes: ["admin"] }, headers }));
    expect(firstBody.key).toMatch(/^pk_/);
    expectNoneIn(row, [firstBody.key]);
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replayBody).toEqual(firstBody);
    expect((await service.fetch("/v1/auth/me", { headers: { "x-api-key": replayBody.key } })).status).toBe(200);
  });

  it("POST /v1/webhooks: the row does not hold the signing secret; a replay answers the same secret", async () => {
    const { firstBody, row, replay, replayBody } = await twice((headers) => service.clientFor(user).POST("/v1/webhooks", { body: { url: "http://127.0.0.1:9/idem", events: ["message.created"] }, headers }));
    expect(firstBody.secret).toMatch(/^whsec_/);
    expectNoneIn(row, [firstBody.secret, firstBody.secret.slice("whsec_".length)]);
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replayBody).toEqual(firstBody);
  });

  it("answers 409 when the stored answer can no longer be opened (SECRETS_KEY changed), never 500", async () => {
    const { row } = await twice((headers) => service.clientFor(user).POST("/v1/auth/api-keys", { body: { name: "unreadable", scopes: ["admin"] }, headers }));
    await service.services.db.knex("idempotency_keys").where({ scope: row.scope, key: row.key }).update({ response_sealed: "v1.c2VhbGVkIHdpdGggYW5vdGhlciBrZXk" });
    const replay = await service.clientFor(user).POST("/v1/auth/api-keys", { body: { name: "unreadable", scopes: ["admin"] }, headers: { "idempotency-key": row.key as string } });
    expect(replay.response.status).toBe(409);
    expect(replay.error!.error.code).toBe("conflict");
  });
});
