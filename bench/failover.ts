// `npm run bench:failover`: the primary killed under mixed traffic (issue 38, docs/operations.md
// "Failover"). Each run starts the Patroni cluster of scripts/ha/cluster.sh (etcd, three PostgreSQL
// 15 nodes with synchronous replication, HAProxy), two API processes (`persona serve --no-worker`)
// and a worker process (`persona worker`) on it, drives chat sends (blocking and streamed, against
// the fake upstream), knowledge uploads, room posts, new personas and webhook deliveries to a
// loopback receiver, kills the primary's postmaster with SIGKILL, and prints: every operation's
// outcomes, the unavailability window, whether the processes recovered by themselves, and whether
// every write a client saw acknowledged is on the new primary. Needs root or the postgres user's
// rights on Debian 12 (the script installs what is missing).
//   BENCH_RUNS (default 3), BENCH_SECONDS of traffic per run (default 40), BENCH_KILL_AFTER_S
//   (default 12), BENCH_CLIENTS (default 6), HA_PORT_BASE (default 26400), BENCH_KILL: `postmaster`
//   (default) or `node` (Patroni killed too, as if the machine were lost: the leader key lapses
//   after Patroni's ttl, 10 s, before a standby takes over). FAILOVER_KEEP_LOGS=1 keeps each run's
//   process output and requests.json (every request's outcome and times) even when its checks pass.
//   BENCH_POOLER=1 puts PgBouncer in transaction mode between the service and HAProxy (port
//   HA_PORT_BASE + 60), its notifications' session going to HAProxy directly.
import type { KillMode } from "../test/scale/failover-cluster.ts";
import { describeReport, runFailoverScenario, type FailoverReport } from "../test/scale/failover-scenario.ts";

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 40);
const KILL_AFTER_S = Number(process.env.BENCH_KILL_AFTER_S ?? 12);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 6);
const PORT_BASE = Number(process.env.HA_PORT_BASE ?? 26400);
const KILL = (process.env.BENCH_KILL ?? "postmaster") as KillMode;
const POOLER_PORT = process.env.BENCH_POOLER === "1" ? PORT_BASE + 60 : undefined;
if (KILL !== "postmaster" && KILL !== "node") throw new Error(`BENCH_KILL must be postmaster or node, not ${String(KILL)}`);

const log = (line: string) => process.stderr.write(`  ${line}\n`);
const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

console.log(`node ${process.version}; ${RUNS} run(s) of ${SECONDS} s of traffic from ${CLIENTS} clients, the primary's ${KILL === "node" ? "node (Patroni and postmaster)" : "postmaster"} killed after ${KILL_AFTER_S} s${POOLER_PORT ? ", through PgBouncer" : ""}`);
const reports: FailoverReport[] = [];
let failed = false;
for (let run = 1; run <= RUNS; run++) {
  console.log(`\nrun ${run}/${RUNS}`);
  const report = await runFailoverScenario({ portBase: PORT_BASE, trafficMs: SECONDS * 1000, killAfterMs: KILL_AFTER_S * 1000, clients: CLIENTS, kill: KILL, log, ...(POOLER_PORT ? { poolerPort: POOLER_PORT } : {}) });
  reports.push(report);
  for (const line of describeReport(report)) console.log(`  ${line}`);
  const ok = report.lost.length === 0 && report.processesKept && report.unexpected.length === 0 && report.tail.failed === 0;
  if (!ok) {
    failed = true;
    console.log(`  CHECKS FAILED; the processes' output is in ${report.logDir}`);
  }
}

const windows = reports.map((report) => report.windowMs);
const promoted = reports.map((report) => report.promotedAfterMs).filter((value): value is number => value !== undefined);
const seconds = (value: number | undefined) => (value === undefined ? "-" : `${(value / 1000).toFixed(2)} s`);
console.log("");
console.log(`unavailability window over ${windows.length} run(s): p50 ${seconds(percentile(windows, 50))}, max ${seconds(Math.max(...windows))}  (${windows.map((w) => seconds(w)).join(", ")})`);
console.log(`new leader named after the kill: p50 ${seconds(percentile(promoted, 50))}`);
console.log(`cluster start: p50 ${seconds(percentile(reports.map((report) => report.clusterStartMs), 50))}`);
console.log(`acknowledged writes: ${reports.reduce((sum, report) => sum + report.acknowledged, 0)}, lost: ${reports.reduce((sum, report) => sum + report.lost.length, 0)}`);
process.exit(failed ? 1 : 0);
