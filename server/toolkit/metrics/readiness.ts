import type { components } from "../../../generated/openapi.d.ts";
import type { Services } from "../services.ts";
import { askPrimary, inCluster } from "./ipc.ts";
import { longestDueWaitMs, workerProgress } from "./jobs.ts";
import { workerStatus } from "./stall.ts";

type Schemas = components["schemas"];
export type ProcessChecks = Schemas["ProcessChecks"];
export type ProcessReadiness = Schemas["ProcessReadiness"];
export type ReadinessBody = Schemas["Readiness"] | Schemas["NotReadiness"];

/**
 * What /readyz says (docs/operations.md, Monitoring, says what each check means): this process's
 * own checks, and with `persona serve --processes N` every process's, asked of the primary. Ready
 * when the database answers, the worker (if this process runs one) runs and makes progress, and
 * every process is ready or still starting.
 */
export async function readiness(services: Services): Promise<{ ready: boolean; body: ReadinessBody }> {
  const others = inCluster() ? (askPrimary("readiness") as Promise<ProcessReadiness[]>).catch((error: unknown) => {
    services.log.warn({ err: error }, "readiness: the primary did not say how the processes are");
    return undefined;
  }) : undefined;
  const checks = await processChecks(services);
  const own = checksPass(checks);
  if (!others) return own ? { ready: true, body: { status: "ready", checks: checks as Schemas["ReadyChecks"] } } : { ready: false, body: { status: "not_ready", checks } };
  const processes = await others;
  // A process still starting (or started again in place of one that died) takes no connections
  // yet: the others serve. One that answers not ready, or not at all, is dealt connections it fails.
  const all = processes !== undefined && processes.some((each) => each.status === "ready") && processes.every((each) => each.status === "ready" || each.status === "starting");
  const ready = own && all;
  const listed = processes ? { processes } : {};
  if (ready) return { ready, body: { status: "ready", checks: { ...(checks as Schemas["ReadyChecks"]), processes: "ok" }, ...listed } };
  return { ready, body: { status: "not_ready", checks: { ...checks, processes: all ? "ok" : "error" }, ...listed } };
}

export function checksPass(checks: ProcessChecks): boolean {
  return checks.database === "ok" && (checks.worker === "ok" || checks.worker === "disabled");
}

/** This process's own checks: the database answers a statement; its worker runs and makes progress. */
export async function processChecks(services: Services): Promise<ProcessChecks> {
  const [database, worker] = await Promise.all([databaseCheck(services), workerCheck(services)]);
  return { database, worker };
}

async function databaseCheck(services: Services): Promise<ProcessChecks["database"]> {
  try {
    await services.db.ping();
    return "ok";
  } catch (error) {
    services.log.warn({ err: error }, "readiness: database check failed");
    return "error";
  }
}

async function workerCheck(services: Services): Promise<ProcessChecks["worker"]> {
  const state = services.health.worker;
  const progress = workerProgress(services);
  if (state !== "ok" || !progress) return state;
  try {
    return await workerStatus(progress, performance.now(), services.config.worker.stallMs, () => longestDueWaitMs(services.db.knex, progress.tasks));
  } catch {
    // The queue could not be read: the database check says why.
    return "ok";
  }
}
