import { readFileSync } from "node:fs";
import autocannon from "autocannon";

export interface LoadRequest {
  method: "GET" | "POST";
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface LoadOptions {
  connections: number;
  durationS: number;
  warmupS: number;
  pipelining: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  total: number;
  statusCounts: Record<string, number>;
  non2xx: number;
  errors: number;
  timeouts: number;
  /**
   * CPU time the server (the process `pid` and its child processes) spent per request during the
   * measured run, in ms: unlike requests/s it hardly moves with what else the machine is doing.
   */
  cpuMsPerRequest?: number;
}

/** User + system CPU ms of `pid` (all its threads) and of its child processes (cluster workers). */
export function cpuMsOf(pid: number): number {
  const one = (id: number) => {
    try {
      const fields = readFileSync(`/proc/${id}/stat`, "utf8").replace(/^.*\) /, "").split(" ");
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
    } catch {
      return 0;
    }
  };
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    // no children, or not Linux
  }
  return one(pid) + children.reduce((sum, child) => sum + one(child), 0);
}

function once(url: string, request: LoadRequest, options: LoadOptions, durationS: number): Promise<autocannon.Result> {
  return autocannon({
    url: url + request.path,
    method: request.method,
    headers: request.headers,
    body: request.body,
    connections: options.connections,
    pipelining: options.pipelining,
    duration: durationS,
  });
}

/** A warm-up run (thrown away), then the measured run; with `pid`, the server's CPU time per request too. */
export async function measure(url: string, request: LoadRequest, options: LoadOptions, pid?: number): Promise<LoadResult> {
  if (options.warmupS > 0) await once(url, request, options, options.warmupS);
  const cpuBefore = pid ? cpuMsOf(pid) : 0;
  const result = await once(url, request, options, options.durationS);
  const cpuMs = pid ? cpuMsOf(pid) - cpuBefore : 0;
  const statusCounts: Record<string, number> = {};
  for (const [status, stats] of Object.entries(result.statusCodeStats ?? {})) statusCounts[status] = stats.count ?? 0;
  return {
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    total: result.requests.total,
    statusCounts,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    ...(pid && result.requests.total ? { cpuMsPerRequest: cpuMs / result.requests.total } : {}),
  };
}

/** A problem line when not every request answered `status` (or some errored or timed out). */
export function expectAll(label: string, result: LoadResult, status: number): string | undefined {
  const others = Object.entries(result.statusCounts).filter(([code]) => Number(code) !== status);
  if (others.length || result.errors || result.timeouts) {
    return `${label}: want all ${status}, got ${JSON.stringify(result.statusCounts)} errors=${result.errors} timeouts=${result.timeouts}`;
  }
  return undefined;
}
