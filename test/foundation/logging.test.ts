import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
  service = await startTestService({ log });
});

afterAll(async () => {
  await service?.close();
});

describe("request logs", () => {
  it("carry the request id, method, URL and status, and no credential", async () => {
    const user = await registerUser(service, { password: "Secret-password-77" });
    const response = await service.fetch("/v1/integrations", { headers: { ...user.auth, "x-request-id": "log-test-1" } });
    expect(response.status).toBe(501);
    const refused = await service.fetch("/v1/integrations", { headers: { "x-api-key": "pk_supersecretkey", "x-request-id": "log-test-2" } });
    expect(refused.status).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const line = lines.map((text) => JSON.parse(text)).find((entry) => entry.reqId === "log-test-1" && entry.res);
    expect(line).toMatchObject({ req: { method: "GET", url: "/v1/integrations" }, res: { statusCode: 501 } });
    const all = lines.join("\n");
    expect(all).not.toContain("pk_supersecretkey");
    expect(all).not.toContain(user.accessToken);
    expect(all).not.toContain(user.refreshToken);
    expect(all).not.toContain("Secret-password-77");
  });
});
