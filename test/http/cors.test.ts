import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS, CORS_MAX_AGE_SECONDS } from "../../server/toolkit/http/cors.ts";
import { createConversation, createPersona, sendStream } from "../support/chat.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// CORS for the origins of CORS_ORIGINS (issue 35, item 7; ADR 0306): an allowed origin's preflight
// and requests, on the service's own paths and on /openai/v1; a refused origin's preflight (403, no
// CORS header) and requests (served, without CORS headers). The browser's side is
// test/sdk/cors-browser.e2e.test.ts.
const ALLOWED = "http://localhost:5173";
const OTHER_ALLOWED = "https://app.example.com";
const REFUSED = "https://evil.example";

let service: TestService;
let alice: TestUser;

beforeAll(async () => {
  service = await startTestService({ env: { CORS_ORIGINS: `${ALLOWED},${OTHER_ALLOWED}` } });
  alice = await registerUser(service);
});

afterAll(async () => {
  await service?.close();
});

const corsHeaders = (answer: Response) => [...answer.headers.keys()].filter((name) => name.startsWith("access-control-"));
const listOf = (value: string | null) => (value ?? "").split(",").map((item) => item.trim().toLowerCase()).filter(Boolean);

function preflight(path: string, origin: string, method: string, headers: string[]) {
  return service.fetch(path, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": method, "access-control-request-headers": headers.join(",").toLowerCase() },
  });
}

describe("an allowed origin", () => {
  it("gets its preflight answered 204: its own origin, the methods, the headers, a max-age, no credentials", async () => {
    const answer = await preflight("/v1/personas", ALLOWED, "POST", ["Authorization", "Content-Type", "Idempotency-Key"]);
    expect(answer.status).toBe(204);
    expect(answer.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    expect(listOf(answer.headers.get("access-control-allow-methods"))).toEqual(["get", "post", "put", "patch", "delete"]);
    expect(listOf(answer.headers.get("access-control-allow-headers"))).toEqual(CORS_ALLOWED_HEADERS.map((name) => name.toLowerCase()));
    expect(answer.headers.get("access-control-max-age")).toBe(String(CORS_MAX_AGE_SECONDS));
    expect(answer.headers.get("access-control-allow-credentials")).toBeNull();
    expect(listOf(answer.headers.get("vary"))).toContain("origin");
    // Nothing else of the request is done: no rate limit counted.
    expect(answer.headers.get("x-ratelimit-limit")).toBeNull();
    expect(answer.headers.get("x-request-id")).toBeTruthy();
  });

  it("allows every header the SDK and the openai package send, on /openai/v1 too", async () => {
    for (const name of ["X-API-Key", "Last-Event-ID", "X-Persona-Conversation-Id", "X-Stainless-Retry-Count", "X-Stainless-Timeout", "OpenAI-Organization"]) {
      expect(CORS_ALLOWED_HEADERS.map((header) => header.toLowerCase())).toContain(name.toLowerCase());
    }
    const answer = await preflight("/openai/v1/chat/completions", OTHER_ALLOWED, "POST", ["Authorization", "Content-Type", "X-Stainless-OS", "X-Stainless-Lang"]);
    expect(answer.status).toBe(204);
    expect(answer.headers.get("access-control-allow-origin")).toBe(OTHER_ALLOWED);
  });

  it("reads an answer's request id, rate-limit state and Retry-After: the exposed headers, exactly", async () => {
    const answer = await service.fetch("/v1/auth/me", { headers: { origin: ALLOWED, ...alice.auth } });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    expect(answer.headers.get("access-control-allow-credentials")).toBeNull();
    expect(listOf(answer.headers.get("access-control-expose-headers"))).toEqual(CORS_EXPOSED_HEADERS.map((name) => name.toLowerCase()));
    expect(listOf(answer.headers.get("access-control-expose-headers"))).toEqual(
      expect.arrayContaining(["x-request-id", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after"]),
    );
    expect(listOf(answer.headers.get("vary"))).toContain("origin");
  });

  it("reads an error answer and a stream too, on both doors", async () => {
    const refused = await service.fetch("/v1/auth/me", { headers: { origin: ALLOWED } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    const openaiRefused = await service.fetch("/openai/v1/models", { headers: { origin: ALLOWED } });
    expect(openaiRefused.status).toBe(401);
    expect(openaiRefused.headers.get("access-control-allow-origin")).toBe(ALLOWED);

    const persona = await createPersona(service, alice);
    const conversation = await createConversation(service, alice, persona.id);
    const stream = await sendStream(service, alice, conversation.id, "Hello", { headers: { origin: ALLOWED } });
    expect(stream.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(stream.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    await stream.text();
  });
});

describe("an origin not listed", () => {
  it("gets its preflight refused 403, without any CORS header, in the shape of its path", async () => {
    const answer = await preflight("/v1/personas", REFUSED, "POST", ["Authorization", "Content-Type"]);
    expect(answer.status).toBe(403);
    expect(corsHeaders(answer)).toEqual([]);
    expect(listOf(answer.headers.get("vary"))).toContain("origin");
    expect(await answer.json()).toEqual({ error: { code: "forbidden", message: expect.stringContaining("CORS_ORIGINS") } });

    const openai = await preflight("/openai/v1/chat/completions", REFUSED, "POST", ["Authorization"]);
    expect(openai.status).toBe(403);
    expect(corsHeaders(openai)).toEqual([]);
    expect(await openai.json()).toEqual({ error: { message: expect.any(String), type: "permission_error", param: null, code: "forbidden" } });
  });

  it("is served as any client without CORS: the answer, and no CORS header", async () => {
    const answer = await service.fetch("/v1/auth/me", { headers: { origin: REFUSED, ...alice.auth } });
    expect(answer.status).toBe(200);
    expect(corsHeaders(answer)).toEqual([]);
    expect(listOf(answer.headers.get("vary"))).toContain("origin");
  });

  it("an origin that differs from a listed one only in case, port or a trailing slash is not that origin", async () => {
    for (const origin of ["http://LOCALHOST:5173", "http://localhost:5174", "http://localhost:5173/", "http://127.0.0.1:5173"]) {
      const answer = await preflight("/v1/personas", origin, "POST", ["Authorization"]);
      expect(answer.status, origin).toBe(403);
      expect(corsHeaders(answer)).toEqual([]);
    }
  });
});

describe("a request without Origin", () => {
  it("(a server, the CLI) gets no CORS header; an OPTIONS request that is no preflight is an unknown route", async () => {
    const answer = await service.fetch("/v1/auth/me", { headers: alice.auth });
    expect(answer.status).toBe(200);
    expect(corsHeaders(answer)).toEqual([]);
    const options = await service.fetch("/v1/personas", { method: "OPTIONS" });
    expect(options.status).toBe(404);
    expect(corsHeaders(options)).toEqual([]);
  });
});
