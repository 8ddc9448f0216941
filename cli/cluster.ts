import cluster, { type Worker } from "node:cluster";
import type { Config } from "../server/toolkit/config.ts";
import { relayNotifications } from "../server/toolkit/db/cluster-notifications.ts";
import { startEmbeddedDatabase, type EmbeddedDatabase } from "../server/toolkit/db/embedded.ts";
import { createLogger } from "../server/toolkit/logger.ts";
import { runUntilSignal } from "../server/process.ts";
import { startService } from "../server/runtime.ts";
import { startCensus } from "../server/toolkit/metrics/census.ts";
import { joinCensus } from "../server/toolkit/metrics/member.ts";

const START = "persona:start";
const READY = "persona:ready";
interface StartMessage {
  type: typeof START;
  /** The embedded database the primary serves; undefined on PostgreSQL. */
  embeddedUrl: string | undefined;
  /** Only the first process runs the job worker (the others serve HTTP only). */
  jobs: boolean;
}

/**
 * `persona serve --processes N`: N API processes on one port (node:cluster; the primary hands out
 * connections) and one database, so that a machine's cores all serve. On PostgreSQL each process
 * is an ordinary server. On the embedded default the primary opens the data dir and serves PGlite
 * from its own thread; the processes connect to it, and their notifications (credential
 * revocations, room events) are relayed between them over cluster IPC. Jobs run in the first
 * process. SIGTERM drains every process, then closes the database.
 */
export async function serveCluster(config: Config, processes: number): Promise<void> {
  if (cluster.isPrimary) await primary(config, processes);
  else await worker(config);
}

async function primary(config: Config, processes: number): Promise<void> {
  const log = createLogger(config);
  // Every process's readiness and metrics, and the METRICS_PORT listener for all of them (a port in use stops it here).
  const census = await startCensus(config, log);
  const embedded: EmbeddedDatabase | undefined = config.databaseUrl ? undefined : await startEmbeddedDatabase(config);
  const workers = new Set<Worker>();
  let stopping = false;
  const stop = async () => {
    stopping = true;
    const exited = [...workers].map((child) => new Promise<void>((resolve) => child.once("exit", () => resolve())));
    for (const child of workers) child.process.kill("SIGTERM");
    await Promise.all(exited);
    await census.stop();
    await embedded?.stop();
  };
  const fork = (slot: number, jobs: boolean, onReady?: () => void) => {
    const child = cluster.fork();
    let ready = false;
    workers.add(child);
    census.track(slot, child);
    relayNotifications(child, () => workers);
    child.on("message", (message: unknown) => {
      if (ready || (message as { type?: string } | undefined)?.type !== READY) return;
      ready = true;
      onReady?.();
    });
    child.once("online", () => child.send({ type: START, embeddedUrl: embedded?.url, jobs } satisfies StartMessage));
    child.once("exit", (code, signal) => {
      workers.delete(child);
      if (stopping) return;
      // One that never started (a bad setting, a port in use) would fail again: stop them all.
      if (!ready) {
        log.error({ pid: child.process.pid, code, signal }, "an API process could not start; stopping");
        void stop().finally(() => process.exit(1));
        return;
      }
      log.error({ pid: child.process.pid, code, signal }, "an API process died; starting another");
      fork(slot, jobs);
    });
  };
  // The first one alone (it applies migrations), then the others.
  fork(1, config.worker.enabled, () => {
    for (let i = 2; i <= processes; i++) fork(i, false);
  });
  log.info({ processes, database: embedded ? "embedded" : "postgres" }, "persona is starting its processes");
  runUntilSignal(stop, log);
}

async function worker(config: Config): Promise<void> {
  // Answers the primary's probes from the start (`starting` until the service runs).
  const census = joinCensus();
  const message = await new Promise<StartMessage>((resolve) => {
    const onMessage = (value: unknown) => {
      if ((value as StartMessage | undefined)?.type !== START) return;
      process.off("message", onMessage);
      resolve(value as StartMessage);
    };
    process.on("message", onMessage);
  });
  config.worker.enabled = message.jobs;
  // Ctrl-C reaches every process of the group; the primary stops this one with SIGTERM, once.
  process.on("SIGINT", () => undefined);
  // A primary that is gone (kill -9) takes its database with it.
  process.on("disconnect", () => process.exit(1));
  const service = await startService(config, { sharedEmbeddedUrl: message.embeddedUrl, listenWhenReady: true });
  census.serve(service.services);
  process.send?.({ type: READY });
  process.once("SIGTERM", () => {
    service.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        service.services.log.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  });
}
