import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handlers } from "../../server/areas.ts";
import { ApiError } from "../../server/toolkit/http/errors.ts";
import { workerLogger } from "../../server/toolkit/jobs/logger.ts";
import { httpSerializers } from "../../server/toolkit/logger.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";
import { until } from "../support/wait.ts";

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

/**
 * Waits for the line that ends each request of `ids` (written once its response has closed, which
 * may be after the client has the answer): every line of those requests is in by then.
 */
const completed = (...ids: string[]) =>
  until(`the request lines of ${ids.join(", ")}`, () => ids.every((id) => lines.some((text) => {
    const entry = JSON.parse(text);
    return entry.reqId === id && entry.res;
  })), 10_000);

describe("request logs", () => {
  it("carry the request id, method, URL and status, and no credential", async () => {
    const user = await registerUser(service, { password: "Secret-password-77" });
    const response = await service.fetch("/v1/rooms", { headers: { ...user.auth, "x-request-id": "log-test-1" } });
    expect(response.status).toBe(501);
    const refused = await service.fetch("/v1/rooms", { headers: { "x-api-key": "pk_supersecretkey", "x-request-id": "log-test-2" } });
    expect(refused.status).toBe(401);
    await completed("log-test-1", "log-test-2");
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
    await completed("log-501", "log-404");
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
    await completed("log-500");
    const withStack = entries().filter((entry) => entry.reqId === "log-500" && entry.err?.stack);
    expect(withStack).toHaveLength(1);
    expect(withStack[0]!.err!.stack).toContain("a bug in a handler");
  });
});

describe("the job worker's log lines (issue 31 M3)", () => {
  it("keep the job's id, task, attempts, duration and error, never its payload or other metadata", () => {
    const mine: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        mine.push(...chunk.toString().split("\n").filter(Boolean));
        done();
      },
    });
    const logger = workerLogger(pino({ level: "trace", serializers: { err: pino.stdSerializers.err } }, sink)).scope({ label: "worker", workerId: "w1" });
    const job = { id: "7", task_identifier: "email_send", attempts: 2, max_attempts: 8, payload: { text: "token rp_secret-in-payload" }, key: "k" };
    logger.info("Completed task 7 (email_send, 1.00ms) with success", { job, duration: 1, success: true });
    logger.error("Failed task 7 (email_send)", { failure: true, job, error: new Error("smtp refused"), duration: 2 });
    logger.error("Emitting job:success raised an error", { eventName: "job:success", payload: { job } });

    expect(mine).toHaveLength(3);
    expect(mine.join("\n")).not.toContain("rp_secret-in-payload");
    const [completed, failed, emitting] = mine.map((line) => JSON.parse(line));
    expect(completed).toMatchObject({ component: "worker", label: "worker", workerId: "w1", jobId: "7", task: "email_send", attempts: 2, maxAttempts: 8, duration: 1, success: true });
    expect(completed.job).toBeUndefined();
    expect(failed).toMatchObject({ jobId: "7", failure: true, err: { message: "smtp refused" } });
    expect(emitting).toMatchObject({ eventName: "job:success" });
    expect(emitting.payload).toBeUndefined();
  });
});
