import type { Services } from "../services.ts";
import { timeKnexStatements } from "./database.ts";
import { exposition, startMetricsListener } from "./exposition.ts";
import { inCluster } from "./ipc.ts";
import { metricsOn, turnMetricsOn } from "./registry.ts";
import { measuredChatModel } from "./replies.ts";
import { addSource } from "./sources.ts";

export interface WatchedService {
  /** Where the `METRICS_PORT` listener serves, when it does. */
  url: string | undefined;
  stop: () => Promise<void>;
}

/**
 * Measures a started service (a one-line call in runtime.ts, before its worker and app start):
 * with `METRICS_PORT` or `METRICS_TOKEN` set, metrics are turned on for the process; its pools and
 * job queue are read when scraped, its knex statements timed, its chat model measured, and the
 * `METRICS_PORT` listener started (not in a process of `persona serve --processes N`, whose primary
 * serves it for all of them).
 */
export async function watchService(services: Services): Promise<WatchedService> {
  const { config } = services;
  if (config.metrics.port > 0 || config.metrics.token) turnMetricsOn();
  if (!metricsOn()) return { url: undefined, stop: async () => {} };
  services.providers.llm = measuredChatModel(services.providers.llm);
  const stopReading = addSource(services);
  const stopTiming = timeKnexStatements(services.db.knex);
  const stopWatching = () => {
    stopReading();
    stopTiming();
  };
  try {
    // In a process of `persona serve --processes N` the primary listens, for every process.
    const listener = config.metrics.port > 0 && !inCluster() ? await startMetricsListener(config.metrics, exposition, services.log) : undefined;
    return {
      url: listener?.url,
      stop: async () => {
        await listener?.close();
        stopWatching();
      },
    };
  } catch (error) {
    stopWatching();
    throw error;
  }
}
