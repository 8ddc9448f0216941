import type { TokenSigner } from "./tokens.ts";
import type { Config } from "./config.ts";
import type { Database } from "./db/database.ts";
import type { JobQueue } from "./jobs/queue.ts";
import type { Logger } from "./logger.ts";
import type { Providers } from "./providers/types.ts";
import type { StreamPlaces } from "./http/stream-limits.ts";

/**
 * The areas' process-scoped state (live-event logs, write batches, caches, limiters): one typed field
 * per registry, each declared by its area next to its type (declaration merging, so the toolkit
 * imports no area) and created once per process in runtime.ts, which the compiler holds to
 * creating every declared field.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled in by the areas
export interface AreaRegistries {}

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
  /** The open server-sent event streams per user in this process (stream-limits.ts). */
  streamPlaces: StreamPlaces;
  /** The areas' process-scoped registries (see `AreaRegistries`). */
  areas: AreaRegistries;
}
