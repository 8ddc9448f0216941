import { describe, expect, it } from "vitest";
import { describeReport, runFailoverScenario, type FailoverReport } from "./failover-scenario.ts";

// The primary killed under mixed traffic, in short (bench/failover.ts runs the long version and
// prints the figures): the Patroni cluster of scripts/ha/cluster.sh (etcd, three PostgreSQL nodes
// with synchronous replication, HAProxy), two API processes and a worker process on it, a few
// seconds of chat sends, streams, uploads, room posts, new personas and webhook deliveries, then a
// SIGKILL of the primary's postmaster. The service answers 503 with Retry-After meanwhile (never
// 500), serves again without any process restarted, has every write a client saw acknowledged on
// the new primary, runs the jobs in flight again and ends every streamed reply.
//
// Only with PERSONA_HA_TEST=1: the topology needs Debian's patroni, etcd-server and haproxy (the
// script installs them as root, and PgBouncer for the second run) and takes about two minutes to run.

const enabled = process.env.PERSONA_HA_TEST === "1";

/** What every failover run must show, whatever stands between the service and the cluster. */
function expectRecovered(report: FailoverReport): void {
  const summary = describeReport(report).join("\n");
  console.log(summary);
  expect(report.newLeader, summary).toBeDefined();
  expect(report.newLeader, summary).not.toBe(report.killed.node);
  expect(report.lost, summary).toEqual([]);
  expect(report.acknowledged, summary).toBeGreaterThan(0);
  // Meanwhile: only 503 with Retry-After, or a stream's `error` event; never a 500, a hang or a cut.
  expect(report.unexpected, summary).toEqual([]);
  expect(report.windowMs, summary).toBeLessThan(30_000);
  expect(report.processesKept, summary).toBe(true);
  expect(report.tail.failed, summary).toBe(0);
  // The jobs in flight ran again: every document processed, every acknowledged message's webhook delivered.
  expect(report.documents.processing ?? 0, summary).toBe(0);
  expect(report.webhooks.delivered, summary).toBe(report.webhooks.expected);
  // Every streamed reply heard of ended: done, or failed (its end could not be stored, or its lease ran out).
  expect(Object.keys(report.generations).filter((status) => status !== "done" && status !== "failed"), summary).toEqual([]);
}

const portBase = Number(process.env.HA_PORT_BASE ?? 26500);
const scenario = { portBase, trafficMs: 12_000, killAfterMs: 4_000, clients: 4, settleMs: 60_000 };

describe.runIf(enabled)("failover of the primary under traffic", () => {
  it("answers 503 briefly, recovers by itself and loses no acknowledged write", { timeout: 300_000 }, async () => {
    expectRecovered(await runFailoverScenario(scenario));
  });

  // The layers of docs/operations.md: the service → PgBouncer (transaction mode) → HAProxy → the
  // leader, notifications straight to HAProxy. PgBouncer's `server_login_retry` (1 s there, 15 s by
  // default) decides how soon it reaches the new primary.
  it("does the same through PgBouncer in transaction mode", { timeout: 300_000 }, async () => {
    expectRecovered(await runFailoverScenario({ ...scenario, poolerPort: portBase + 60 }));
  });
});
