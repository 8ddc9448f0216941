import type { Logger } from "./toolkit/logger.ts";

/** Stops the service on SIGTERM or SIGINT, then exits; a second signal exits at once. */
export function runUntilSignal(stop: () => Promise<void>, log: Logger): void {
  let received = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (received) process.exit(1);
    received = true;
    log.info({ signal }, "signal received");
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}
