import type { Logger } from "./toolkit/logger.ts";

/**
 * SIGTERM (process managers, container runtimes) and SIGINT (Ctrl-C) for a server process, from its
 * first line to its exit. The handlers are installed before start-up: as PID 1 in a container, a
 * signal without a handler is ignored, so a `docker stop` during a slow start would wait for its
 * SIGKILL. Before the service runs there is nothing to drain and a signal exits at once; once it
 * runs, a signal drains it and exits; an insistent second signal exits at once.
 */
const SIGNALS = ["SIGTERM", "SIGINT"] as const;

/**
 * One Ctrl-C can arrive twice: the terminal signals the whole foreground process group, and `npm
 * start` (npm's run-script forwards SIGINT and SIGTERM to its child) sends its own copy. A repeat of
 * the same signal this soon is that echo; only a later one is the operator insisting.
 */
const ECHO_MS = 1000;

/** The exit status a process killed by the signal would have had (128 + its number), as shells and systemd read it. */
const statusOf = (signal: NodeJS.Signals) => 128 + (signal === "SIGINT" ? 2 : 15);

let running: { stop: () => Promise<void>; log: Logger } | undefined;
let first: { signal: NodeJS.Signals; at: number } | undefined;

function onSignal(signal: NodeJS.Signals): void {
  if (first) {
    if (signal === first.signal && Date.now() - first.at < ECHO_MS) return;
    running?.log.warn({ signal }, "second signal: exiting without waiting for the drain");
    process.exit(1);
  }
  first = { signal, at: Date.now() };
  if (!running) process.exit(statusOf(signal));
  const { stop, log } = running;
  log.info({ signal }, "signal received");
  stop().then(
    () => process.exit(0),
    (error: unknown) => {
      log.error({ err: error }, "shutdown failed");
      process.exit(1);
    },
  );
}

/** Installs the handlers (once per process); until `runUntilSignal`, a signal exits at once. */
export function handleSignals(): void {
  for (const signal of SIGNALS) if (!process.listeners(signal).includes(onSignal)) process.on(signal, onSignal);
}

/** Stops the service on SIGTERM or SIGINT, then exits; a second signal exits at once. */
export function runUntilSignal(stop: () => Promise<void>, log: Logger): void {
  running = { stop, log };
  handleSignals();
}
