import { Logger as WorkerLogger } from "graphile-worker";
import type { Logger } from "../logger.ts";

/** graphile-worker's log lines, into the service's pino logger. */
export function workerLogger(log: Logger): WorkerLogger {
  const child = log.child({ component: "worker" });
  return new WorkerLogger((scope) => (level, message, meta) => {
    const fields = { ...scope, ...meta };
    if (level === "error") child.error(fields, message);
    else if (level === "warning") child.warn(fields, message);
    else if (level === "info") child.info(fields, message);
    else child.debug(fields, message);
  });
}
