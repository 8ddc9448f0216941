// `npm run bench:webhooks`: webhook delivery on PostgreSQL with a local receiver.
// (a) baseline: the receiver's raw request rate, POSTed straight from this process (128 in flight)
//     with the same sender (keep-alive, signature headers) and no database: what loopback HTTP
//     alone costs on this machine;
// (b) throughput: outbox events committed in batches, each fanned out and delivered by the
//     in-process worker: deliveries per second (target >= 500), and the ratio to (a);
// (c) latency: events committed one by one at a moderate rate: commit -> receiver p50/p99
//     (target p50 100 ms).
// Runs on a scratch database created on DATABASE_URL's server (default: the local test server)
// and dropped afterwards.
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { loadConfig } from "../server/toolkit/config.ts";
import { outboxRow } from "../server/toolkit/events/outbox.ts";
import { startService } from "../server/runtime.ts";
import { postOnce } from "../server/areas/webhooks/sender.ts";
import { signatureHeaders } from "../server/areas/webhooks/signing.ts";
import { scratchDatabase } from "./lib/database.ts";

const SERVER = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:55432/postgres";
const EVENTS = Number(process.env.BENCH_EVENTS ?? 5_000);
const LATENCY_EVENTS = Number(process.env.BENCH_LATENCY_EVENTS ?? 300);
const LATENCY_GAP_MS = Number(process.env.BENCH_LATENCY_GAP_MS ?? 10);
const CONCURRENCY = process.env.WORKER_CONCURRENCY ?? "16";
const TARGETS = { perSecond: 500, p50Ms: 100 };

const sleep = (ms: number) => new Promise((wait) => setTimeout(wait, ms));
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;


// ---------------------------------------------------------------- the receiver
const arrivals = new Map<string, number>();
const receiver = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    const id = req.headers["webhook-id"];
    if (typeof id === "string" && !arrivals.has(id)) arrivals.set(id, performance.now());
    res.writeHead(200).end();
  });
});
receiver.keepAliveTimeout = 30_000;
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

const database = await scratchDatabase(SERVER, "webhooks");
const config = loadConfig({
  DATABASE_URL: database.url,
  PORT: "0",
  LOG_LEVEL: "warn",
  WORKER_CONCURRENCY: CONCURRENCY,
  DATABASE_POOL_MAX: "30",
  WEBHOOKS_ALLOW_PRIVATE_URLS: "true",
});
const service = await startService(config);
try {
  const knex = service.services.db.knex;

  // (a) baseline: the same sender, 128 requests in flight, no database.
  const body = JSON.stringify({ id: "baseline", type: "message.created", created_at: new Date().toISOString(), data: { n: 0 } });
  const secret = "whsec_" + randomBytes(24).toString("base64");
  const baselineCount = EVENTS;
  let next = 0;
  const baselineStart = performance.now();
  await Promise.all(
    Array.from({ length: 128 }, async () => {
      while (next < baselineCount) {
        next++;
        await postOnce(new URL(receiverUrl), body, signatureHeaders(secret, "baseline", body, new Date()), { timeoutMs: 5_000, allowPrivate: true });
      }
    }),
  );
  const baselinePerSecond = baselineCount / ((performance.now() - baselineStart) / 1000);

  // A user with one webhook on the receiver, through the API.
  const email = `bench_${randomBytes(4).toString("hex")}@example.com`;
  const registered = await fetch(`${service.url}/v1/auth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, username: email.split("@")[0], password: "Correct-horse-9" }),
  }).then((r) => r.json() as Promise<{ user: { id: string }; access_token: string }>);
  const created = await fetch(`${service.url}/v1/webhooks`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${registered.access_token}` },
    body: JSON.stringify({ url: receiverUrl, events: ["message.created"] }),
  });
  if (created.status !== 201) throw new Error(`webhook registration failed: ${created.status} ${await created.text()}`);
  const userId = registered.user.id;

  // (b) throughput: batches of 500 events, each batch one commit.
  const waitFor = async (ids: string[], timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (ids.some((id) => !arrivals.has(id))) {
      if (Date.now() > deadline) throw new Error(`${ids.filter((id) => !arrivals.has(id)).length} deliveries missing`);
      await sleep(5);
    }
  };
  const rows = Array.from({ length: EVENTS }, (_, n) => outboxRow({ userId, type: "message.created", data: { n }, at: new Date() }));
  const throughputStart = performance.now();
  for (let start = 0; start < rows.length; start += 500) await knex("event_outbox").insert(rows.slice(start, start + 500));
  await waitFor(rows.map((row) => row.id), 600_000);
  const lastArrival = Math.max(...rows.map((row) => arrivals.get(row.id)!));
  const perSecond = EVENTS / ((lastArrival - throughputStart) / 1000);

  // (c) latency: one event per commit, LATENCY_GAP_MS apart.
  await sleep(500);
  const committed = new Map<string, number>();
  for (let n = 0; n < LATENCY_EVENTS; n++) {
    const row = outboxRow({ userId, type: "message.created", data: { n }, at: new Date() });
    await knex("event_outbox").insert(row);
    committed.set(row.id, performance.now());
    await sleep(LATENCY_GAP_MS);
  }
  await waitFor([...committed.keys()], 120_000);
  const latencies = [...committed].map(([id, at]) => arrivals.get(id)! - at).sort((a, b) => a - b);
  const p50 = percentile(latencies, 50);
  const p99 = percentile(latencies, 99);

  const round = (value: number) => Math.round(value * 10) / 10;
  console.log(`webhooks on PostgreSQL, worker concurrency ${CONCURRENCY}, ${EVENTS} events`);
  console.log("| figure | measured | target | baseline | ratio |");
  console.log("|---|---|---|---|---|");
  console.log(`| deliveries per second | ${Math.round(perSecond)} | >= ${TARGETS.perSecond} | ${Math.round(baselinePerSecond)} raw POSTs/s to the receiver | ${round(perSecond / baselinePerSecond)} |`);
  console.log(`| commit -> delivery p50 | ${round(p50)} ms | ${TARGETS.p50Ms} ms | | |`);
  console.log(`| commit -> delivery p99 | ${round(p99)} ms | | | |`);
  const failed = perSecond < TARGETS.perSecond || p50 > TARGETS.p50Ms;
  if (failed) console.log("below target");
  process.exitCode = failed ? 1 : 0;
} finally {
  await service.stop();
  await database.drop();
  receiver.closeAllConnections();
  receiver.close();
}
