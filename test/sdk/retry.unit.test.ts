// Retries, timeouts and aborts against a loopback server that misbehaves on purpose.
import { afterEach, describe, expect, test } from "vitest";
import {
  ConnectionError,
  createClient,
  NotImplementedError,
  ProviderUnavailableError,
  RateLimitError,
  TimeoutError,
  UpstreamError,
} from "../../sdk/src/index.ts";
import { errorBody, json, startFakeServer, type FakeServer } from "./fake-server.ts";

const me = { id: "u1", email: "a@example.com", username: "a", display_name: null, avatar_url: null, bio: null, email_verified: false, plan: "free", created_at: "2026-01-01T00:00:00Z", updated_at: "2026-01-01T00:00:00Z" };
let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("retries", () => {
  test("a 503 with Retry-After in seconds, then a 429 with an HTTP date, then success", async () => {
    const answers = [
      () => ({ status: 503, body: errorBody("provider_unavailable"), headers: { "retry-after": "0" } }),
      () => ({ status: 429, body: errorBody("rate_limited"), headers: { "retry-after": new Date(Date.now() + 1000).toUTCString() } }),
      () => ({ status: 200, body: me, headers: {} }),
    ];
    const times: number[] = [];
    server = await startFakeServer((_req, res, i) => {
      times.push(Date.now());
      const answer = answers[i]!();
      json(res, answer.status, answer.body, answer.headers);
    });
    const client = createClient({ baseUrl: server.url, apiKey: "pk_test" });
    expect((await client.auth.me()).id).toBe("u1");
    expect(server.requests).toHaveLength(3);
    // The HTTP date is second-granular, so the wait it asks for is anywhere above zero up to a second.
    expect(times[2]! - times[1]!).toBeGreaterThan(0);
    expect(server.requests.every((r) => r.headers["x-api-key"] === "pk_test")).toBe(true);
  });

  test("gives up after maxRetries and throws the typed error of the last answer", async () => {
    server = await startFakeServer((_req, res) => json(res, 502, errorBody("upstream_error", "model down"), { "retry-after": "0", "x-request-id": "req-42" }));
    const client = createClient({ baseUrl: server.url, apiKey: "k" }, { maxRetries: 3 });
    const error = await client.auth.me().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).requestId).toBe("req-42");
    expect((error as UpstreamError).message).toBe("model down");
    expect(server.requests).toHaveLength(4);
  });

  test("501 is never retried, nor is a Retry-After longer than a minute", async () => {
    server = await startFakeServer((req, res) =>
      req.url === "/v1/auth/me"
        ? json(res, 501, errorBody("not_implemented"))
        : json(res, 429, errorBody("rate_limited"), { "retry-after": "900" }),
    );
    const client = createClient({ baseUrl: server.url, apiKey: "k" });
    await expect(client.auth.me()).rejects.toBeInstanceOf(NotImplementedError);
    const limited = await client.auth.apiKeys.list().catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(RateLimitError);
    expect((limited as RateLimitError).retryAfter).toBe(900);
    expect(server.requests).toHaveLength(2);
  });

  test("a POST without an Idempotency-Key in the contract is sent once", async () => {
    server = await startFakeServer((_req, res) => json(res, 503, errorBody("provider_unavailable"), { "retry-after": "0" }));
    const client = createClient({ baseUrl: server.url });
    await expect(client.auth.login({ email: "a@example.com", password: "x" })).rejects.toBeInstanceOf(ProviderUnavailableError);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.headers["idempotency-key"]).toBeUndefined();
  });

  test("a POST is not retried for carrying a key its operation ignores", async () => {
    server = await startFakeServer((_req, res) => json(res, 503, errorBody("provider_unavailable"), { "retry-after": "0" }));
    const client = createClient({ baseUrl: server.url });
    const login = client.auth.login({ email: "a@example.com", password: "x" }, { headers: { "Idempotency-Key": "not-honoured" } });
    await expect(login).rejects.toBeInstanceOf(ProviderUnavailableError);
    expect(server.requests).toHaveLength(1);
  });

  test("a creating POST gets a random Idempotency-Key and is retried with the same key and body", async () => {
    server = await startFakeServer((_req, res, i) =>
      i < 2 ? json(res, 500, errorBody("internal_error"), { "retry-after": "0" }) : json(res, 201, { id: "k1" }),
    );
    const client = createClient({ baseUrl: server.url, apiKey: "k" });
    await client.auth.apiKeys.create({ name: "ci", scopes: ["admin"] });
    expect(server.requests).toHaveLength(3);
    const keys = new Set(server.requests.map((r) => r.headers["idempotency-key"]));
    expect(keys.size).toBe(1);
    expect([...keys][0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(server.requests.map((r) => r.body))).toEqual(new Set([JSON.stringify({ name: "ci", scopes: ["admin"] })]));
  });

  test("the caller's own Idempotency-Key is kept, on helpers and on the raw client", async () => {
    server = await startFakeServer((_req, res) => json(res, 201, { id: "p1" }));
    const client = createClient({ baseUrl: server.url, apiKey: "k" });
    await client.personas.create({ name: "N", instructions: "I" }, { idempotencyKey: "mine-1" });
    await client.raw.POST("/v1/personas", { body: { name: "N", instructions: "I" }, params: { header: { "Idempotency-Key": "mine-2" } } });
    await client.raw.PUT("/v1/personas/{id}", { params: { path: { id: "0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01" } }, body: { name: "M" } });
    expect(server.requests.map((r) => r.headers["idempotency-key"])).toEqual(["mine-1", "mine-2", undefined]);
  });

  test("connection errors are retried for GETs, then thrown as ConnectionError", async () => {
    server = await startFakeServer((req) => void req); // never answers...
    const url = server.url;
    await server.close(); // ...and is gone: every attempt is refused
    server = undefined;
    let attempts = 0;
    const client = createClient({ baseUrl: url, apiKey: "k" }, { maxRetries: 1, fetch: (r) => (attempts++, globalThis.fetch(r)) });
    const error = await client.auth.me().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionError);
    expect((error as ConnectionError).code).toBe("connection_error");
    expect(attempts).toBe(2);
  });

  test("a dropped connection on a keyed POST is retried; on a plain POST it is not", async () => {
    server = await startFakeServer((req, res, i) => {
      if (i === 0 || req.url === "/v1/auth/login") return void res.socket?.destroy();
      json(res, 201, { id: "c1" });
    });
    const client = createClient({ baseUrl: server.url, apiKey: "k" });
    await client.conversations.create({ persona_id: "0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01" });
    expect(server.requests).toHaveLength(2);
    await expect(client.auth.login({ email: "a@example.com", password: "x" })).rejects.toBeInstanceOf(ConnectionError);
    expect(server.requests).toHaveLength(3);
  });
});

describe("timeouts and aborts", () => {
  test("an attempt without an answer within `timeout` is a TimeoutError", async () => {
    server = await startFakeServer(() => undefined); // holds every request open
    const client = createClient({ baseUrl: server.url, apiKey: "k" }, { timeout: 150, maxRetries: 1 });
    // A TimeoutError after two attempts is the proof that `timeout` ended each; no wall-clock bound.
    const error = await client.auth.me().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toBeInstanceOf(ConnectionError);
    expect((error as TimeoutError).code).toBe("timeout");
    expect(server.requests).toHaveLength(2);
  });

  test("the caller's signal aborts the call and its retries with the signal's reason", async () => {
    const controller = new AbortController();
    server = await startFakeServer((_req, res, i) => {
      if (i !== 0) return undefined;
      // Aborted while the client waits out the Retry-After, not before its first request arrived.
      setTimeout(() => controller.abort(new Error("user gave up")), 50);
      return json(res, 503, errorBody("provider_unavailable"), { "retry-after": "30" });
    });
    const client = createClient({ baseUrl: server.url, apiKey: "k" });
    await expect(client.auth.me({ signal: controller.signal })).rejects.toThrow("user gave up");
    expect(server.requests).toHaveLength(1);
  });
});
