import { collectDefaultMetrics, Registry } from "prom-client";

/**
 * This process's metrics (Prometheus, prom-client): one registry per process, not one per started
 * service, because what it measures (requests, streams, model calls, the event loop, memory) belongs
 * to the process and the hooks that count it sit in code that has no `Services` at hand (the HTTP
 * stages, the SSE writer, the statement runner). A registry of our own rather than prom-client's
 * global one: nothing a library registers there ends up in the scrape unasked.
 */
export const registry = new Registry();

let on = false;

/**
 * Whether this process keeps metrics. Every hook checks it first, so a server without a metrics
 * listener or token pays a function call per hook and nothing else.
 */
export function metricsOn(): boolean {
  return on;
}

/**
 * Turns metrics on for the rest of the process's life: the hooks start counting and prom-client's
 * default metrics (process memory and CPU, heap spaces, GC durations, event-loop delay, handles)
 * are collected.
 */
export function turnMetricsOn(): void {
  if (on) return;
  on = true;
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 });
}

/** Buckets in seconds for things that take milliseconds to minutes (requests, statements, jobs, model calls). */
export const SECONDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120] as const;
