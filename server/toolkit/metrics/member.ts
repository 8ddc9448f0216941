import type { Services } from "../services.ts";
import { isMessage, markMember, PROBE, PROBED, type Probe, type Probed, type Question } from "./ipc.ts";
import { checksPass, processChecks } from "./readiness.ts";
import { registry } from "./registry.ts";

export interface CensusMember {
  /** The service this process runs, once started: until then it answers `starting`. */
  serve(services: Services): void;
}

/**
 * Makes this process (one of `persona serve --processes N`) answer the primary's probes: its metrics
 * as prom-client's JSON, its readiness as its own checks. Called first thing, so that a process that
 * is still starting says so rather than not answering.
 */
export function joinCensus(): CensusMember {
  markMember();
  let services: Services | undefined;
  const answer = async (question: Question): Promise<unknown> => {
    if (question === "metrics") return registry.getMetricsAsJSON();
    if (!services) return { status: "starting" };
    const checks = await processChecks(services);
    return { status: checksPass(checks) ? "ready" : "not_ready", checks };
  };
  process.on("message", (message: unknown) => {
    if (!isMessage<Probe>(message, PROBE)) return;
    const reply = (sent: Omit<Probed, "type" | "id">) => {
      // The primary may be gone (it takes this process with it: see cli/cluster.ts).
      if (process.connected) process.send!({ type: PROBED, id: message.id, ...sent } satisfies Probed);
    };
    answer(message.question).then(
      (answered) => reply({ answer: answered }),
      (error: unknown) => reply({ error: error instanceof Error ? error.message : String(error) }),
    );
  });
  return {
    serve: (started) => {
      services = started;
    },
  };
}
