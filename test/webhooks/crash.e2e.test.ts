import { spawn, type ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { outboxRow } from "../../server/toolkit/events/outbox.ts";
import { root } from "../support/contract.ts";
import { databaseSettings, startTestService, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";
import { createWebhook } from "./helpers.ts";
import { startReceiver, type Receiver } from "./receiver.ts";

// At least once through a crash: a worker process is killed with SIGKILL in the middle of 1,000
// deliveries, a new one is started, and every event must reach the receiver with nothing left pending.

const EVENTS = 1_000;
const sleep = (ms: number) => new Promise((wait) => setTimeout(wait, ms));

let service: TestService;
let hook: Receiver;
const children: ChildProcess[] = [];

/** `persona worker` on the test's database (for the embedded kind, the PGlite the test serves on loopback). */
function startWorker(): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, ["cli/persona.ts", "worker"], {
    cwd: root,
    env: {
      ...process.env,
      ...databaseSettings(service.services.db.url),
      LOG_LEVEL: "warn",
      LOG_PRETTY: "false",
      WORKER_CONCURRENCY: "8",
      WORKER_POLL_INTERVAL_MS: "100",
      WEBHOOKS_ALLOW_PRIVATE_URLS: "true",
      WEBHOOKS_TIMEOUT_MS: "1000",
      WEBHOOKS_RETRY_BASE_MS: "50",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout!.on("data", (chunk: Buffer) => (log += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (log += chunk.toString()));
  children.push(child);
  return { child, output: () => log };
}

beforeAll(async () => {
  // The API alone: deliveries happen only in the worker processes this test starts and kills.
  service = await startTestService({ env: { WORKER_ENABLED: "false", WEBHOOKS_ALLOW_PRIVATE_URLS: "true" } });
  // A little latency per answer, so that the kill lands while deliveries are in flight.
  hook = await startReceiver(() => ({ status: 200, delayMs: 5 }));
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await hook?.close();
  await service?.close();
});

describe("a worker killed mid-batch", () => {
  it("loses no event: after a restart every event id arrives at least once and none is pending", { timeout: 240_000 }, async () => {
    const user = await registerUser(service);
    await createWebhook(service, user, { url: hook.url, events: ["message.created"] });
    const knex = service.services.db.knex;
    const at = new Date();
    const rows = Array.from({ length: EVENTS }, (_, n) => outboxRow({ userId: user.id, type: "message.created", data: { n }, at }));
    for (let start = 0; start < rows.length; start += 250) await knex("event_outbox").insert(rows.slice(start, start + 250));
    const expected = new Set(rows.map((row) => row.id));

    const first = startWorker();
    const deadline = Date.now() + 120_000;
    while (hook.received.length < EVENTS / 5 && Date.now() < deadline) {
      if (first.child.exitCode !== null) throw new Error(`worker exited early:\n${first.output()}`);
      await sleep(20);
    }
    first.child.kill("SIGKILL");
    await new Promise((done) => first.child.once("exit", done));
    const seenAtKill = new Set(hook.received.map((entry) => String(entry.headers["webhook-id"])));
    expect(seenAtKill.size).toBeGreaterThan(0);
    expect(seenAtKill.size, "the kill must land mid-batch").toBeLessThan(EVENTS);

    const second = startWorker();
    const pending = async () =>
      Number((await knex("webhook_deliveries").where({ status: "pending" }).count({ n: "*" }))[0]!.n) +
      Number((await knex("event_outbox").whereNull("dispatched_at").count({ n: "*" }))[0]!.n);
    const until = Date.now() + 180_000;
    for (;;) {
      const seen = new Set(hook.received.map((entry) => String(entry.headers["webhook-id"])));
      if (seen.size === EVENTS && (await pending()) === 0) break;
      if (Date.now() > until) throw new Error(`after restart: ${seen.size} of ${EVENTS} seen, ${await pending()} pending\n${second.output()}`);
      if (second.child.exitCode !== null) throw new Error(`worker exited:\n${second.output()}`);
      await sleep(250);
    }
    const seen = new Set(hook.received.map((entry) => String(entry.headers["webhook-id"])));
    expect([...seen].every((id) => expected.has(id))).toBe(true);
    expect(seen.size).toBe(EVENTS);
    const statuses = (await knex("webhook_deliveries").select("status").count({ n: "*" }).groupBy("status")) as { status: string; n: number }[];
    expect(statuses.map((row) => ({ status: row.status, n: Number(row.n) }))).toEqual([{ status: "succeeded", n: EVENTS }]);
    second.child.kill("SIGTERM");
    await new Promise((done) => second.child.once("exit", done));
  });
});
