/**
 * `stalled` when a job this worker could run has waited longer than `stallMs` while the worker
 * started none in that time and runs none: a worker busy with long jobs is not stalled, and one
 * that keeps starting jobs is keeping up as well as it can (the queue's age is a metric of its own).
 * The queue is read only when the worker has started nothing for `stallMs`.
 */
export async function workerStatus(progress: { lastStartedAt: number; running: number }, now: number, stallMs: number, longestWaitMs: () => Promise<number>): Promise<"ok" | "stalled"> {
  if (progress.running > 0 || now - progress.lastStartedAt < stallMs) return "ok";
  return (await longestWaitMs()) > stallMs ? "stalled" : "ok";
}
