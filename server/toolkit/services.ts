import type { TokenSigner } from "./tokens.ts";
import type { Config } from "./config.ts";
import type { Database } from "./db/database.ts";
import type { JobQueue } from "./jobs/queue.ts";
import type { Logger } from "./logger.ts";
import type { Providers } from "./providers/types.ts";

/** What handlers and services are given: the process's shared resources. */
export interface Services {
  config: Config;
  db: Database;
  log: Logger;
  jobs: JobQueue;
  /** Injectable clock, so that expiry and scheduling rules can be tested. */
  now: () => Date;
  /** Every outside capability (chat model, embeddings, e-mail, ...): one overridable set. */
  providers: Providers;
  /** Signs and verifies access tokens with this installation's secret. */
  tokens: TokenSigner;
  /** Readiness of the parts /readyz reports on. */
  health: { worker: "ok" | "disabled" | "error" };
  /**
   * Aborts when the process starts shutting down, before in-flight requests are drained: streams
   * that never end by themselves (room events) close then, and their clients reconnect elsewhere.
   */
  stopping: AbortSignal;
}
