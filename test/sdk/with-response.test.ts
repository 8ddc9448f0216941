// `.withResponse()` against the real service: the request id and the rate-limit state come from the
// headers the service really sends (X-Request-Id, X-RateLimit-*), for a call, a list and a chat stream.
// The header edge cases are in with-response.unit.test.ts, against a loopback server.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createClient, NotFoundError, type PersonaClient } from "../../sdk/src/index.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";

let service: TestService;
let client: PersonaClient;
beforeAll(async () => {
  service = await startTestService();
  const user = await registerUser(service);
  client = createClient({ baseUrl: service.url, accessToken: user.accessToken, refreshToken: user.refreshToken });
});
afterAll(async () => {
  await service?.close();
});

describe("withResponse() against the service", () => {
  test("a call gives its data with the Response, the request id and the rate-limit state", async () => {
    const before = Date.now();
    // With a greeting of its own: no greeting job changes the persona between the reads below.
    const created = await client.personas.create({ name: "Captain Nova", instructions: "Answer briefly.", greeting_message: "Hello." }).withResponse();
    expect(created.data.name).toBe("Captain Nova");
    expect(created.response.status).toBe(201);
    expect(created.requestId).toBe(created.response.headers.get("x-request-id"));
    expect(created.requestId).toMatch(/^[\w.:-]+$/);
    const limit = service.services.config.rateLimitPerMinute;
    expect(created.rateLimit).toEqual({ limit, remaining: expect.any(Number), resetAt: expect.any(Date) });
    expect(created.rateLimit!.remaining).toBeLessThan(limit);
    // The window ends within a minute (the header is in whole seconds).
    expect(created.rateLimit!.resetAt.getTime()).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(created.rateLimit!.resetAt.getTime()).toBeLessThanOrEqual(Date.now() + 61_000);

    // A request id the caller sends is the one the service answers with, and awaiting works as before.
    const fetched = await client.personas.get(created.data.id, { headers: { "X-Request-Id": "sdk-with-response-1" } }).withResponse();
    expect(fetched.requestId).toBe("sdk-with-response-1");
    expect(await client.personas.get(created.data.id)).toEqual(fetched.data);

    // An error answer carries the same metadata on the typed error.
    const missing = await client.personas.get("0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01").withResponse().catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect((missing as NotFoundError).requestId).toMatch(/^[\w.:-]+$/);
    expect((missing as NotFoundError).rateLimit?.limit).toBe(limit);
  });

  test("a list gives its first page's answer; a chat stream its opening answer, and is read on as before", async () => {
    const persona = await client.personas.create({ name: "Quill", instructions: "Answer briefly." });
    const page = await client.personas.list({ limit: 1 }).withResponse();
    expect(page.response.status).toBe(200);
    expect(page.data.data).toHaveLength(1);
    expect(page.rateLimit?.limit).toBe(service.services.config.rateLimitPerMinute);

    const conversation = await client.conversations.create({ persona_id: persona.id });
    const { data: stream, response, requestId, rateLimit } = await client.conversations.stream(conversation.id, { content: "Hello!" }).withResponse();
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    expect(requestId).toMatch(/^[\w.:-]+$/);
    expect(rateLimit?.limit).toBe(service.services.config.rateLimitPerMinute);
    expect((await stream.text()).length).toBeGreaterThan(0);
    expect(stream.finalMessageId).toBeTruthy();
  });
});
