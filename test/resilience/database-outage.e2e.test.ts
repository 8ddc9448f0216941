import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../support/ports.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";
import { register, sleep, until } from "./support.ts";

// PostgreSQL stopped for 5 s under traffic, then started again: meanwhile every request answers
// 503 in the error envelope (never 500, never a hang) and /readyz says not ready; afterwards the
// same service process serves again by itself. The test runs its own cluster (never the shared
// one), so it needs PostgreSQL's server binaries; it is skipped without them, and on the
// embedded kind, which has no server to lose.

const BIN = "/usr/lib/postgresql/15/bin";
const available = existsSync(`${BIN}/pg_ctl`) && existsSync(`${BIN}/initdb`);
const asRoot = process.getuid?.() === 0;

let dir: string;
let port: number;
let service: TestService;

/** Runs a server binary as the `postgres` user when the tests run as root (PostgreSQL refuses root). */
function pg(bin: string, args: string[]): void {
  const [command, argv] = asRoot ? ["runuser", ["-u", "postgres", "--", `${BIN}/${bin}`, ...args]] : [`${BIN}/${bin}`, args];
  execFileSync(command, argv, { cwd: "/", stdio: "pipe" });
}
const start = () => pg("pg_ctl", ["-D", `${dir}/data`, "-l", `${dir}/log`, "-w", "-o", `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir}`, "start"]);
const stop = () => pg("pg_ctl", ["-D", `${dir}/data`, "-m", "fast", "-w", "stop"]);

describe.skipIf(!available || databaseKind !== "postgres")("PostgreSQL going away for 5 s mid-traffic", () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "persona-outage-"));
    chmodSync(dir, 0o777);
    port = await freePort();
    pg("initdb", ["-D", `${dir}/data`, "-U", "postgres", "--auth=trust", "--no-sync"]);
    start();
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    service = await startTestService({ database: { url, drop: async () => undefined }, env: { DATABASE_URL: url } });
  }, 120_000);
  afterAll(async () => {
    // The stop is bounded (the fixed time is a deadline), so that a stop that hangs still lets the
    // cluster go instead of leaving it running, and fails the file by name.
    const stopped = service ? await Promise.race([service.close().then(() => true, () => true), sleep(30_000).then(() => false)]) : true;
    if (dir) {
      try {
        stop();
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    }
    expect(stopped, "the service stops within 30 s of the outage's end").toBe(true);
  }, 60_000);

  it("answers 503 with the envelope meanwhile, says not ready, and recovers without a restart", { timeout: 120_000 }, async () => {
    const user = await register(service.url);
    const created = await service.clientFor(user).POST("/v1/personas", { body: { name: "Steady", instructions: "Stay calm." } });
    expect(created.response.status).toBe(201);

    const answers: { status: number; code?: string; retryAfter: string | null; phase: string }[] = [];
    let phase = "before";
    let running = true;
    const traffic = (async () => {
      while (running) {
        const requests = [
          service.fetch("/v1/personas", { headers: user.auth, signal: AbortSignal.timeout(15_000) }),
          service.fetch("/v1/auth/me", { headers: user.auth, signal: AbortSignal.timeout(15_000) }),
        ];
        for (const request of requests) {
          const at = phase;
          const response = await request;
          const body = (await response.json()) as { error?: { code: string } };
          answers.push({ status: response.status, code: body.error?.code, retryAfter: response.headers.get("retry-after"), phase: at });
        }
        // Paces the traffic: a fixed rate is the point here.
        await sleep(50);
      }
    })();

    await until("traffic served before the outage", async () => answers.filter((answer) => answer.status === 200).length >= 2, 30_000);
    phase = "down";
    stop();
    const downSince = Date.now();
    let notReady = false;
    while (Date.now() - downSince < 5_000) {
      const readyz = await service.fetch("/readyz", { signal: AbortSignal.timeout(10_000) });
      if (readyz.status === 503) notReady = (((await readyz.json()) as { status: string }).status === "not_ready") || notReady;
      else await readyz.arrayBuffer();
      // Paces the probes of an outage that lasts a fixed 5 s on purpose.
      await sleep(250);
    }
    start();
    phase = "recovering";
    await until("/readyz ready again", async () => (await service.fetch("/readyz")).status === 200, 60_000);
    phase = "after";
    const sinceRecovered = answers.length;
    await until("requests served again", async () => answers.slice(sinceRecovered).filter((answer) => answer.status === 200).length >= 10, 30_000);
    running = false;
    await traffic;

    expect(notReady, "/readyz must say not_ready while the database is down").toBe(true);
    const failures = answers.filter((answer) => answer.status !== 200);
    expect(failures.length, "some requests must have met the outage").toBeGreaterThan(0);
    for (const failure of failures) {
      expect(failure, JSON.stringify(failure)).toMatchObject({ status: 503, code: "service_unavailable" });
      expect(Number(failure.retryAfter)).toBeGreaterThan(0);
    }
    const tail = answers.slice(-10);
    expect(tail.every((answer) => answer.status === 200), JSON.stringify(tail)).toBe(true);
  });
});
