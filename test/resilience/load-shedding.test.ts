import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { sleep, until } from "../support/wait.ts";

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
      // One turn of the event loop, so that its delay monitor sees the stall: no condition to wait for.
      await sleep(0);
      const response = await service.fetch("/v1/personas", { headers: user.auth });
      return response.status === 429 ? response : (await response.arrayBuffer(), undefined);
    });
    expect(Number(shed.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await shed.json()).toMatchObject({ error: { code: "rate_limited" } });
    stallLoop(1_000);
    // As above: one turn of the loop, so that the probe is asked while requests are being shed.
    await sleep(0);
    expect((await service.fetch("/healthz")).status).toBe(200);
    await until("served again", async () => (await service.fetch("/v1/personas", { headers: user.auth })).status === 200);
  });
});

describe("admission control in the service", () => {
  let tight: TestService;
  let bob: TestUser;
  beforeAll(async () => {
    // One request worked on at a time and none waiting: any overlap is refused.
    tight = await startTestService({ env: { ADMISSION_MAX_IN_FLIGHT: "1", ADMISSION_QUEUE: "0" } });
    bob = await until("registered", () => registerUser(tight));
  });
  afterAll(async () => {
    await tight?.close();
  });

  it("refuses requests past the bound with 429 and Retry-After, serves the others and serves again afterwards", { timeout: 60_000 }, async () => {
    const refused = await until("a request of a burst is refused", async () => {
      const burst = await Promise.all(Array.from({ length: 8 }, () => tight.fetch("/v1/personas", { headers: bob.auth })));
      for (const response of burst) expect([200, 429]).toContain(response.status);
      const shed = burst.find((response) => response.status === 429);
      const served = burst.filter((response) => response.status === 200).length;
      await Promise.all(burst.filter((response) => response !== shed).map((response) => response.arrayBuffer()));
      return shed && served > 0 ? shed : (await shed?.arrayBuffer(), undefined);
    });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await refused.json()).toMatchObject({ error: { code: "rate_limited" } });
    expect((await tight.fetch("/healthz")).status).toBe(200);
    expect((await tight.fetch("/v1/personas", { headers: bob.auth })).status).toBe(200);
  });
});
