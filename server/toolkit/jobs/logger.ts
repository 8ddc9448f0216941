import { Logger as WorkerLogger } from "graphile-worker";
import type { Logger } from "../logger.ts";

/**
 * graphile-worker's log lines, into the service's pino logger. Its metadata is never passed on as
 * is (issue 31 M3): "Completed task" and "Failed task" carry the whole job, payload included, and
 * other lines carry event payloads. A line keeps the job's id, task and attempts, the duration and
 * the error; nothing else.
 */
export function workerLogger(log: Logger): WorkerLogger {
  const child = log.child({ component: "worker" });
  return new WorkerLogger((scope) => (level, message, meta) => {
    const fields = { ...primitives(scope), ...safeFields(meta) };
    if (level === "error") child.error(fields, message);
    else if (level === "warning") child.warn(fields, message);
    else if (level === "info") child.info(fields, message);
    else child.debug(fields, message);
  });
}

interface JobLike {
  id?: unknown;
  task_identifier?: unknown;
  attempts?: unknown;
  max_attempts?: unknown;
}

function safeFields(meta: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!meta) return {};
  const fields: Record<string, unknown> = {};
  const job = meta.job as JobLike | undefined;
  if (job && typeof job === "object") {
    Object.assign(fields, primitives({ jobId: job.id, task: job.task_identifier, attempts: job.attempts, maxAttempts: job.max_attempts }));
  }
  for (const name of ["duration", "success", "failure", "eventName"]) {
    const value = meta[name];
    if (isPrimitive(value)) fields[name] = value;
  }
  const error = meta.error ?? meta.fatalError;
  if (error instanceof Error) fields.err = error;
  return fields;
}

const isPrimitive = (value: unknown): value is string | number | boolean => ["string", "number", "boolean"].includes(typeof value);

function primitives(values: object): Record<string, string | number | boolean> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => isPrimitive(value))) as Record<string, string | number | boolean>;
}
