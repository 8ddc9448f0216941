import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handlers } from "../../server/areas.ts";
import { notLive } from "../../server/toolkit/http/router.ts";
import type { ApiAnswer } from "../support/api.ts";
import { sendRaw } from "../support/raw.ts";
import { startTestService, jsonHeaders, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";

// Every failure leaves in the contract's envelope: {error: {code, message, details?}}, no stack.
let service: TestService;

beforeAll(async () => {
  service = await startTestService({
    env: { BODY_LIMIT_BYTES: "2048" },
    handlers: {
      ...handlers,
      // Stand-ins for areas not built yet: one that fails unexpectedly, one that breaks the contract.
      marketplace_categories: async () => {
        throw new Error("database exploded at /srv/secret/path.ts:42");
      },
      marketplace_featured: async () => ({ status: 200, body: { data: [{ id: 42 }] } as never }),
      // An area that is not live, whichever areas are built by now.
      ...notLive("stand-in", ["marketplace_list"]),
    },
  });
});

afterAll(async () => {
  await service?.close();
});

/** Asserts the envelope of a raw response or of a typed-client answer, and returns its body. */
async function expectError(answer: Response | ApiAnswer, status: number, code: string) {
  const response = answer instanceof Response ? answer : answer.response;
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  const body = answer instanceof Response ? await answer.json() : (answer.error ?? answer.data);
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe("string");
  expect(JSON.stringify(body)).not.toMatch(/\bat .*\.(ts|js):\d+/);
  return body;
}

describe("the error envelope", () => {
  it("answers malformed JSON with 400 invalid_request", async () => {
    const response = await service.fetch("/v1/auth/login", { method: "POST", headers: jsonHeaders, body: '{"email": ' });
    const body = await expectError(response, 400, "invalid_request");
    expect(body.error.message).toMatch(/not valid JSON/);
  });

  it("answers a body of the wrong content type with 415", async () => {
    const response = await service.fetch("/v1/auth/login", {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "email=a@b.c",
    });
    await expectError(response, 415, "unsupported_media_type");
  });

  it("answers a body over the limit with 413", async () => {
    const answer = await service.api.POST("/v1/auth/login", { body: { email: "a@example.com", password: "x".repeat(4096) } });
    await expectError(answer, 413, "payload_too_large");
  });

  it("answers an unknown route with 404 not_found", async () => {
    await expectError(await service.fetch("/v1/no-such-thing"), 404, "not_found");
    await expectError(await service.fetch("/nope"), 404, "not_found");
  });

  it("answers a method the path does not have with 404 not_found", async () => {
    await expectError(await service.fetch("/healthz", { method: "DELETE" }), 404, "not_found");
  });

  it("answers validation failures with 400 and details.errors naming each field", async () => {
    const answer = await service.api.POST("/v1/auth/register", { body: { email: "not-an-email", password: "short", username: "ab" } });
    const body = await expectError(answer, 400, "invalid_request");
    const paths = body.error.details.errors.map((error: { path: string }) => error.path);
    expect(paths).toEqual(expect.arrayContaining(["/body/email", "/body/password", "/body/username"]));
  });

  it("does not coerce body types: a number where a string belongs is a 400, not a string", async () => {
    const response = await sendRaw(service, "POST", "/v1/auth/register", { body: { email: "typed@example.com", password: "Correct-horse-9", username: 12345 } });
    const body = await expectError(response, 400, "invalid_request");
    expect(body.error.details.errors.map((error: { path: string }) => error.path)).toContain("/body/username");
  });

  it("rejects an out-of-range query parameter and an unknown one", async () => {
    // A valid caller: one without is refused first (issue 31, the caller is known before the rest).
    const headers = (await registerUser(service)).auth;
    const tooBig = await expectError(await service.fetch("/v1/personas?limit=101", { headers }), 400, "invalid_request");
    expect(tooBig.error.details.errors[0].path).toBe("/query/limit");
    const unknown = await expectError(await service.fetch("/v1/personas?colour=red", { headers }), 400, "invalid_request");
    expect(unknown.error.details.errors[0].path).toMatch(/colour/);
  });

  it("answers 401 unauthorized when credentials are missing", async () => {
    const missing = await service.fetch("/v1/personas");
    // RFC 6750: the scheme to use (issue 13, item 13).
    expect(missing.headers.get("www-authenticate")).toBe('Bearer realm="persona"');
    await expectError(missing, 401, "unauthorized");
    await expectError(await service.fetch("/v1/personas", { headers: { authorization: "Basic Zm9vOmJhcg==" } }), 401, "unauthorized");
  });

  it("answers 501 not_implemented for an operation whose area is not live", async () => {
    const user = await registerUser(service);
    const body = await expectError(await service.fetch("/v1/marketplace", { headers: user.auth }), 501, "not_implemented");
    expect(body.error.message).toMatch(/stand-in/);
  });

  it("answers an unexpected exception with 500 internal_error and no internals", async () => {
    const body = await expectError(await service.fetch("/v1/marketplace/categories"), 500, "internal_error");
    expect(body.error.message).toBe("Internal server error");
    expect(JSON.stringify(body)).not.toContain("exploded");
  });

  it("turns a response that breaks the contract into a 500 while responses are validated", async () => {
    const body = await expectError(await service.fetch("/v1/marketplace/featured"), 500, "internal_error");
    expect(body.error.message).toMatch(/does not match the contract/);
  });

  it("tags every response with a request id, and keeps a valid one the client sent", async () => {
    const mine = await service.fetch("/healthz", { headers: { "x-request-id": "trace-123" } });
    expect(mine.headers.get("x-request-id")).toBe("trace-123");
    const generated = await service.fetch("/healthz", { headers: { "x-request-id": "bad id with spaces" } });
    expect(generated.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });
});
