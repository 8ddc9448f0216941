import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { sleep, until } from "./support.ts";

// Load shedding on event-loop delay (LOAD_SHED_DELAY_MS): a stalled loop makes the next requests
// answer 429 with Retry-After in the envelope before any work; probes still answer; once the loop
// is free again requests are served.

let service: TestService;
let user: TestUser;

beforeAll(async () => {
  service = await startTestService({ env: { LOAD_SHED_DELAY_MS: "400" } });
  // Start-up and each operation's first request (its validators compile) stall the loop
  // themselves: retry until admitted.
  user = await until("registered", () => registerUser(service));
});
afterAll(async () => {
  await service?.close();
});

function stallLoop(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // busy: the event loop (shared by the test and the service here) is blocked
  }
}

describe("load shedding", () => {
  it("answers 429 with Retry-After while the event loop is stalled, and serves again afterwards", { timeout: 60_000 }, async () => {
    await until("admitted", async () => (await service.fetch("/v1/personas", { headers: user.auth })).status === 200);
    const shed = await until("a request is shed", async () => {
      stallLoop(1_000);
      await sleep(0);
      const response = await service.fetch("/v1/personas", { headers: user.auth });
      return response.status === 429 ? response : (await response.arrayBuffer(), undefined);
    });
    expect(Number(shed.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await shed.json()).toMatchObject({ error: { code: "rate_limited" } });
    stallLoop(1_000);
    await sleep(0);
    expect((await service.fetch("/healthz")).status).toBe(200);
    await until("served again", async () => (await service.fetch("/v1/personas", { headers: user.auth })).status === 200);
  });
});
