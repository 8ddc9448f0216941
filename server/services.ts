import type { TokenSigner } from "./auth/tokens.ts";
import type { Config } from "./config.ts";
import type { Database } from "./db/database.ts";
import type { JobQueue } from "./jobs/queue.ts";
import type { Logger } from "./logger.ts";
import type { Mailer } from "./providers/email/index.ts";
import type { EmbeddingsProvider } from "./providers/embeddings/index.ts";
import type { ChatModelProvider } from "./providers/llm/index.ts";

/** What handlers and services are given: the process's shared resources. */
export interface Services {
  config: Config;
  db: Database;
  log: Logger;
  jobs: JobQueue;
  /** Injectable clock, so that expiry and scheduling rules can be tested. */
  now: () => Date;
  mail: Mailer;
  /** The chat model provider (replies, titles, greetings). */
  llm: ChatModelProvider;
  embeddings: EmbeddingsProvider;
  /** Signs and verifies access tokens with this installation's secret. */
  tokens: TokenSigner;
  /** Readiness of the parts /readyz reports on. */
  health: { worker: "ok" | "disabled" | "error" };
}
