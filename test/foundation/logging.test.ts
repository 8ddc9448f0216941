import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handlers } from "../../server/handlers.ts";
import { ApiError } from "../../server/http/errors.ts";
import { httpSerializers } from "../../server/logger.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";

// Logs are shipped to places with wider access than the database: a credential must never reach one.
const lines: string[] = [];
let service: TestService;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...chunk.toString().split("\n").filter(Boolean));
      done();
    },
  });
  const log = pino({ level: "debug", serializers: { ...httpSerializers, err: pino.stdSerializers.err } }, sink);
  // Two operations with fixed outcomes, whatever their areas do: an expected refusal (501) and a bug (500).
  service = await startTestService({
    log,
    handlers: {
      ...handlers,
      rooms_list: async () => {
        throw new ApiError(501, "not_implemented", "The rooms area is not live on this server yet");
      },
      rooms_get: async () => {
        throw new TypeError("a bug in a handler");
      },
    },
  });
});

afterAll(async () => {
  await service?.close();
});

describe("request logs", () => {
  it("carry the request id, method, URL and status, and no credential", async () => {
    const user = await registerUser(service, { password: "Secret-password-77" });
    const response = await service.fetch("/v1/rooms", { headers: { ...user.auth, "x-request-id": "log-test-1" } });
    expect(response.status).toBe(501);
    const refused = await service.fetch("/v1/rooms", { headers: { "x-api-key": "pk_supersecretkey", "x-request-id": "log-test-2" } });
    expect(refused.status).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const line = lines.map((text) => JSON.parse(text)).find((entry) => entry.reqId === "log-test-1" && entry.res);
    expect(line).toMatchObject({ req: { method: "GET", url: "/v1/rooms" }, res: { statusCode: 501 } });
    const all = lines.join("\n");
    expect(all).not.toContain("pk_supersecretkey");
    expect(all).not.toContain(user.accessToken);
    expect(all).not.toContain(user.refreshToken);
    expect(all).not.toContain("Secret-password-77");
  });
});

describe("error logs", () => {
  const entries = () => lines.map((text) => JSON.parse(text) as Record<string, unknown> & { reqId?: string; err?: { stack?: string } });

  it("log an expected refusal (4xx, 501) as one line without a stack", async () => {
    const user = await registerUser(service);
    await service.fetch("/v1/rooms", { headers: { ...user.auth, "x-request-id": "log-501" } });
    await service.fetch("/v1/personas/0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01", { headers: { ...user.auth, "x-request-id": "log-404" } });
    await new Promise((resolve) => setTimeout(resolve, 50));
    for (const id of ["log-501", "log-404"]) {
      const mine = entries().filter((entry) => entry.reqId === id);
      expect(mine, id).toHaveLength(1);
      expect(mine[0]!.err, id).toBeUndefined();
      expect(JSON.stringify(mine[0]).length, id).toBeLessThan(600);
    }
  });

  it("log an unexpected failure with its stack, once", async () => {
    const user = await registerUser(service);
    const response = await service.fetch("/v1/rooms/0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01", { headers: { ...user.auth, "x-request-id": "log-500" } });
    expect(response.status).toBe(500);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const withStack = entries().filter((entry) => entry.reqId === "log-500" && entry.err?.stack);
    expect(withStack).toHaveLength(1);
    expect(withStack[0]!.err!.stack).toContain("a bug in a handler");
  });
});
