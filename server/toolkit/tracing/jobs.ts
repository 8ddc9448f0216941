import type { JobHelpers, Task, TaskList } from "graphile-worker";
import { activeTracing, type ActiveTracing } from "./active.ts";
import { JOB_TRACE_KEY } from "./carrier.ts";
import { spanFailed, spanOptions } from "./spans.ts";

/**
 * The worker's tasks, each run inside a span of its own while traces are on: a new trace per job,
 * linked to the span that queued it (the `traceparent` its payload carries, `withTraceparent`),
 * since a job runs later, perhaps in another process, and may serve several requests at once (a
 * webhook fan-out). With traces off the list itself.
 */
export function traceTasks(tasks: TaskList): TaskList {
  const tracing = activeTracing();
  if (!tracing) return tasks;
  return Object.fromEntries(Object.entries(tasks).map(([name, task]) => [name, task && tracedTask(tracing, name, task)]));
}

function tracedTask(tracing: ActiveTracing, name: string, task: Task): Task {
  return (payload: unknown, helpers: JobHelpers) => {
    const queuedBy = payload && typeof payload === "object" ? (payload as Record<string, unknown>)[JOB_TRACE_KEY] : undefined;
    const { job } = helpers;
    const options = spanOptions(tracing, {
      kind: "consumer",
      root: true,
      links: [queuedBy],
      attributes: {
        "messaging.system": "graphile_worker",
        "messaging.operation.type": "process",
        "messaging.destination.name": name,
        "messaging.message.id": String(job.id),
        "persona.job.attempt": job.attempts,
        "persona.job.max_attempts": job.max_attempts,
      },
    });
    return tracing.tracer.startActiveSpan(`job ${name}`, options, async (span) => {
      try {
        return await task(payload, helpers);
      } catch (error) {
        spanFailed(tracing, span, error);
        throw error;
      } finally {
        span.end();
      }
    });
  };
}
