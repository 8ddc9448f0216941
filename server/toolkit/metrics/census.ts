import cluster, { type Worker } from "node:cluster";
import { randomUUID } from "node:crypto";
import { AggregatorRegistry, Gauge, type Registry } from "prom-client";
import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import { startMetricsListener, type MetricsListener } from "./exposition.ts";
import { ANSWER, ASK, isMessage, PROBE, PROBED, type Answer, type Ask, type Probe, type Probed, type Question } from "./ipc.ts";
import type { ProcessChecks, ProcessReadiness } from "./readiness.ts";
import { registry, turnMetricsOn } from "./registry.ts";

/** How long the primary waits for one process's readiness, and for its metrics. */
const READINESS_TIMEOUT_MS = 2_000;
const METRICS_TIMEOUT_MS = 4_000;

type MetricsJson = Awaited<ReturnType<Registry["getMetricsAsJSON"]>>;

const up = new Gauge({
  name: "persona_process_up",
  help: "With `persona serve --processes N`, read by the primary when scraped: 1 for each process that answered with its metrics, 0 for one that did not (starting, stuck or dead).",
  labelNames: ["process"] as const,
  registers: [registry],
});

export interface Census {
  /** `child` now holds place `slot` (1 to N); a process started in place of a dead one takes its place. */
  track(slot: number, child: Worker): void;
  stop(): Promise<void>;
}

/**
 * The primary's part in `persona serve --processes N`: it knows which process holds which place,
 * answers a process that asks about all of them (its /readyz, its token-guarded /metrics) by asking
 * each in turn, and serves the `METRICS_PORT` listener itself, with every process's series labelled
 * `process` (the place, 1 to N; `primary` for its own memory and event loop).
 */
export async function startCensus(config: Config, log: Logger): Promise<Census> {
  if (config.metrics.port > 0 || config.metrics.token) turnMetricsOn();
  const places = new Map<number, Worker | undefined>();
  const waiting = new Map<string, { resolve: (answer: unknown) => void; reject: (error: Error) => void }>();

  const probe = (child: Worker, question: Question, timeoutMs: number): Promise<unknown> => {
    const id = randomUUID();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error(`process ${child.process.pid} did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      waiting.set(id, {
        resolve: (answer) => (clearTimeout(timer), resolve(answer)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      });
      child.send({ type: PROBE, id, question } satisfies Probe);
    });
  };
  const ordered = () => [...places.entries()].sort(([a], [b]) => a - b);
  const connected = (child: Worker | undefined): child is Worker => child !== undefined && child.isConnected() && !child.isDead();

  const readinessOfAll = (): Promise<ProcessReadiness[]> =>
    Promise.all(
      ordered().map(async ([slot, child]): Promise<ProcessReadiness> => {
        if (!connected(child)) return { process: slot, status: "starting" };
        const pid = child.process.pid;
        try {
          const answer = (await probe(child, "readiness", READINESS_TIMEOUT_MS)) as { status: ProcessReadiness["status"]; checks?: ProcessChecks };
          return { process: slot, ...(pid ? { pid } : {}), ...answer };
        } catch {
          return { process: slot, ...(pid ? { pid } : {}), status: "unresponsive" };
        }
      }),
    );

  const metricsOfAll = async (): Promise<string> => {
    const answers = await Promise.all(
      ordered().map(async ([slot, child]) => {
        const answer = connected(child) ? ((await probe(child, "metrics", METRICS_TIMEOUT_MS).catch(() => undefined)) as MetricsJson | undefined) : undefined;
        up.set({ process: String(slot) }, answer ? 1 : 0);
        return answer ? labelled(answer, String(slot)) : [];
      }),
    );
    // The primary's own process metrics; its persona_* series are empty but for `persona_process_up`.
    const own = (await registry.getMetricsAsJSON()).filter((metric) => !metric.name.startsWith("persona_") || metric.name === "persona_process_up");
    return AggregatorRegistry.aggregate([...answers, labelled(own, "primary", "persona_process_up")]).metrics();
  };

  const answer = (question: Question) => (question === "metrics" ? metricsOfAll() : readinessOfAll());
  const onMessage = (child: Worker, message: unknown) => {
    if (isMessage<Probed>(message, PROBED)) {
      const pending = waiting.get(message.id);
      if (!pending) return;
      waiting.delete(message.id);
      if (message.error !== undefined) pending.reject(new Error(message.error));
      else pending.resolve(message.answer);
      return;
    }
    if (!isMessage<Ask>(message, ASK)) return;
    const reply = (sent: Omit<Answer, "type" | "id">) => {
      if (connected(child)) child.send({ type: ANSWER, id: message.id, ...sent } satisfies Answer);
    };
    answer(message.question).then(
      (answered) => reply({ answer: answered }),
      (error: unknown) => reply({ error: error instanceof Error ? error.message : String(error) }),
    );
  };
  cluster.on("message", onMessage);

  let listener: MetricsListener | undefined;
  try {
    listener = config.metrics.port > 0 ? await startMetricsListener(config.metrics, metricsOfAll, log) : undefined;
  } catch (error) {
    cluster.off("message", onMessage);
    throw error;
  }
  return {
    track: (slot, child) => {
      places.set(slot, child);
      child.once("exit", () => {
        if (places.get(slot) === child) places.set(slot, undefined);
      });
    },
    stop: async () => {
      cluster.off("message", onMessage);
      await listener?.close();
    },
  };
}

/**
 * `metrics` with a `process` label on every value, so that one process's series stay apart from
 * another's when prom-client puts them together (each aggregator then sees one value per label set).
 * `except`: a metric that has its own `process` label already.
 */
function labelled(metrics: MetricsJson, process: string, except?: string): MetricsJson {
  return metrics.map((metric) => ({
    ...metric,
    // Kept apart by their labels, no two values are ever combined: `sum` keeps each as it is ('omit' would drop the metric).
    aggregator: "sum",
    values: metric.name === except ? metric.values : metric.values.map((value) => ({ ...value, labels: { ...value.labels, process } })),
  }));
}
