// Preloaded into the service's own process by `npm run bench:hostile` (`node --import`): measures
// that process's event loop with perf_hooks.monitorEventLoopDelay and answers the bench over the IPC
// channel, so that what is measured is the API process's loop and nothing of the bench's own work.
// Messages: `{ type: "loop-probe", id, op: "reset" | "read" }`; each is answered
// `{ type: "loop-probe", id, maxMs, p99Ms, samples }` (the histogram since the last reset). The
// histogram records the whole interval between its timer's firings, so an idle loop shows about its
// resolution (5 ms) and a 200 ms stall about 205 ms.
import { monitorEventLoopDelay } from "node:perf_hooks";

const RESOLUTION_MS = 5;

interface ProbeRequest {
  type: "loop-probe";
  id: number;
  op: "reset" | "read";
}

const isProbeRequest = (message: unknown): message is ProbeRequest =>
  typeof message === "object" && message !== null && (message as ProbeRequest).type === "loop-probe";

if (process.send) {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  process.on("message", (message: unknown) => {
    if (!isProbeRequest(message)) return;
    if (message.op === "reset") histogram.reset();
    // Answered after two more ticks of the histogram's timer: a stall that has just ended is recorded
    // by that timer's next firing, which may come after this message in the same loop turn; and after
    // a reset, the first interval is only measured from the first tick on.
    setTimeout(() => {
      const samples = histogram.count;
      process.send?.({
        type: "loop-probe",
        id: message.id,
        maxMs: samples > 0 ? histogram.max / 1e6 : 0,
        p99Ms: samples > 0 ? histogram.percentile(99) / 1e6 : 0,
        samples,
      });
    }, 2 * RESOLUTION_MS);
  });
  // The channel must not keep the service alive: it stops as it always does, on its signal.
  process.channel?.unref();
}
