import { resolve } from "node:path";
import { z } from "zod";

/**
 * Every setting of the service, read once from the environment and validated here. Nothing else
 * reads `process.env`. The README's settings table mirrors `settings` below.
 */
const bool = z
  .enum(["true", "false", "1", "0", "yes", "no"])
  .transform((value) => value === "true" || value === "1" || value === "yes");
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

export const settings = {
  PORT: { schema: int(0, 65535).default(3000), doc: "HTTP port (0 picks a free one)." },
  HOST: { schema: z.string().min(1).default("127.0.0.1"), doc: "Address to listen on; `0.0.0.0` to accept remote clients." },
  PUBLIC_BASE_URL: { schema: z.url().optional(), doc: "URL clients reach the service at, used in links; default `http://HOST:PORT`." },
  DATABASE_URL: { schema: z.string().regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL").optional(), doc: "PostgreSQL 15+ with pgvector. Unset: the embedded PGlite database." },
  PERSONA_DATA_DIR: { schema: z.string().min(1).default(".persona"), doc: "Data directory of the embedded default (database in `db/`)." },
  EMBEDDED_DB_IN_MEMORY: { schema: bool.default(false), doc: "Keep the embedded database in memory: nothing survives a restart (tests, demos)." },
  EMBEDDED_DB_PORT: { schema: int(0, 65535).default(0), doc: "Loopback port the embedded database is served on (0 picks a free one)." },
  DATABASE_POOL_MAX: { schema: int(1, 200).default(10), doc: "Connections per process to the database." },
  LOG_LEVEL: { schema: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"), doc: "pino log level." },
  LOG_PRETTY: { schema: bool.default(false), doc: "Human-readable logs instead of JSON lines (development)." },
  WORKER_ENABLED: { schema: bool.default(true), doc: "Run the job worker inside the API process (`persona serve --no-worker` sets false)." },
  WORKER_CONCURRENCY: { schema: int(1, 100).default(4), doc: "Jobs run at once per worker process." },
  WORKER_POLL_INTERVAL_MS: { schema: int(50, 60_000).optional(), doc: "How often the worker polls for jobs; default 2000, or 500 on the embedded database (which has no LISTEN/NOTIFY)." },
  RATE_LIMIT_PER_MINUTE: { schema: int(1, 1_000_000).default(600), doc: "Requests per minute per client (user, key or IP) across all processes." },
  BODY_LIMIT_BYTES: { schema: int(1024, 100 * 1024 * 1024).default(1024 * 1024), doc: "Largest JSON or form body accepted (uploads have their own limits)." },
  TRUST_PROXY: { schema: bool.default(false), doc: "Take the client IP from `X-Forwarded-For` (behind a reverse proxy)." },
  SHUTDOWN_TIMEOUT_MS: { schema: int(0, 600_000).default(10_000), doc: "How long SIGTERM waits for in-flight requests and jobs before closing." },
  JWT_SECRET: { schema: z.string().min(32, "must be at least 32 characters").optional(), doc: "Signs access tokens (HS256). Unset: generated once and kept in the database." },
  SECRETS_KEY: { schema: z.string().min(32, "must be at least 32 characters").optional(), doc: "Encrypts secrets at rest (bot tokens, webhook secrets). Unset: generated once and kept in the database." },
  SMTP_URL: { schema: z.string().regex(/^smtps?:\/\//, "must be an smtp:// or smtps:// URL").optional(), doc: "Send e-mail through this SMTP server. Unset: e-mails go to the outbox table and the log." },
  MAIL_FROM: { schema: z.string().min(3).default("Persona <no-reply@persona.local>"), doc: "Sender of the service's e-mails." },
  AUTH_ATTEMPTS_PER_IP: { schema: int(1, 1_000_000).default(50), doc: "Register, login, forgot-password and token calls per client IP per 15 minutes." },
  AUTH_ATTEMPTS_PER_EMAIL: { schema: int(1, 1_000_000).default(10), doc: "Login and forgot-password calls per e-mail address per 15 minutes." },
  LLM_PROVIDER: { schema: z.enum(["openai", "local"]).optional(), doc: "Chat model provider: `openai` (any OpenAI-compatible API) or `local` (the offline deterministic model). Default: `openai` when `OPENAI_BASE_URL` or `OPENAI_API_KEY` is set, else `local`." },
  OPENAI_BASE_URL: { schema: z.url().optional(), doc: "Base URL of the OpenAI-compatible API (e.g. `http://127.0.0.1:11434/v1`). Unset: api.openai.com." },
  OPENAI_API_KEY: { schema: z.string().min(1).optional(), doc: "API key for the OpenAI-compatible API." },
  CHAT_MODEL: { schema: z.string().min(1).optional(), doc: "Default model of new personas. Default: `gpt-4o-mini`, or `local-offline-v1` with the local provider." },
  CHAT_MODELS: { schema: z.string().min(1).optional(), doc: "Comma-separated models a persona may use (400 otherwise). Default: just `CHAT_MODEL`." },
  CHAT_CONTEXT_TOKENS: { schema: int(512, 2_000_000).default(8192), doc: "Token budget of the context sent to the model (instructions, knowledge, history)." },
  CHAT_MAX_OUTPUT_TOKENS: { schema: int(16, 200_000).default(1024), doc: "Most tokens a reply may have." },
  LLM_TIMEOUT_MS: { schema: int(100, 600_000).default(60_000), doc: "How long a model call may take before it fails with 502 upstream_error." },
  LLM_MAX_RETRIES: { schema: int(0, 10).default(2), doc: "Retries of a model call that failed before answering (429, 5xx, connection errors)." },
  STREAM_KEEPALIVE_MS: { schema: int(100, 600_000).default(15_000), doc: "Interval of the comment line that keeps a chat stream open through proxies." },
  EMBEDDINGS_PROVIDER: { schema: z.enum(["openai", "local"]).optional(), doc: "Embeddings provider: `openai` or `local` (hashed lexical, no model files). Default: as `LLM_PROVIDER`." },
  EMBEDDINGS_MODEL: { schema: z.string().min(1).optional(), doc: "Embeddings model. Default: `text-embedding-3-small`, or `local-hashed-lexical-v1` with the local provider." },
  EMBEDDINGS_BATCH_SIZE: { schema: int(1, 2048).default(64), doc: "Chunks embedded per provider call." },
  KNOWLEDGE_CONTEXT_CHUNKS: { schema: int(0, 50).default(4), doc: "Most knowledge chunks put into a reply's context (within the token budget)." },
  WEBHOOKS_ALLOW_PRIVATE_URLS: { schema: bool.default(false), doc: "Let webhooks use `http://` and loopback, private or link-local addresses (local development and tests only)." },
  WEBHOOKS_TIMEOUT_MS: { schema: int(100, 60_000).default(5_000), doc: "How long a webhook receiver has to answer 2xx before the attempt counts as failed." },
  WEBHOOKS_RETRY_BASE_MS: { schema: int(10, 3_600_000).default(10_000), doc: "Delay before a webhook delivery's first retry; the second waits 6 times as long, the third 36 times (each ±25%)." },
  VALIDATE_RESPONSES: { schema: bool.default(false), doc: "Check every JSON response against the contract (on in tests)." },
} as const;

type Settings = typeof settings;
export type Env = { [K in keyof Settings]: z.output<Settings[K]["schema"]> };

export interface Config {
  port: number;
  host: string;
  publicBaseUrl: string | undefined;
  databaseUrl: string | undefined;
  dataDir: string;
  embeddedDbPort: number;
  embeddedDbInMemory: boolean;
  databasePoolMax: number;
  logLevel: Env["LOG_LEVEL"];
  logPretty: boolean;
  worker: { enabled: boolean; concurrency: number; pollIntervalMs: number };
  rateLimitPerMinute: number;
  bodyLimitBytes: number;
  trustProxy: boolean;
  shutdownTimeoutMs: number;
  validateResponses: boolean;
  jwtSecret: string | undefined;
  secretsKey: string | undefined;
  smtpUrl: string | undefined;
  mailFrom: string;
  authAttemptsPerIp: number;
  authAttemptsPerEmail: number;
  llm: {
    provider: "openai" | "local";
    baseUrl: string | undefined;
    apiKey: string | undefined;
    /** The default model of new personas. */
    model: string;
    /** Models a persona may use; always includes `model`. */
    models: string[];
    contextTokens: number;
    maxOutputTokens: number;
    timeoutMs: number;
    maxRetries: number;
  };
  embeddings: { provider: "openai" | "local"; baseUrl: string | undefined; apiKey: string | undefined; model: string; batchSize: number };
  knowledgeContextChunks: number;
  streamKeepAliveMs: number;
  webhooks: { allowPrivateUrls: boolean; timeoutMs: number; retryBaseMs: number };
}

export const LOCAL_CHAT_MODEL = "local-offline-v1";
export const LOCAL_EMBEDDINGS_MODEL = "local-hashed-lexical-v1";

/**
 * Where users reach the service: `PUBLIC_BASE_URL`, else the address this process listens on (the
 * runtime records the real one once it listens, so `PORT=0` gives a usable link). No trailing slash.
 */
export function publicBaseUrl(config: Pick<Config, "publicBaseUrl" | "host" | "port">): string {
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  return (config.publicBaseUrl ?? `http://${host}:${config.port}`).replace(/\/+$/, "");
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Reads and validates every setting; a bad value throws a `ConfigError` naming the setting. */
export function loadConfig(env: Record<string, string | undefined> = process.env, overrides: Partial<Config> = {}): Config {
  const problems: string[] = [];
  const read = {} as Record<string, unknown>;
  for (const [name, { schema }] of Object.entries(settings)) {
    const raw = env[name] === "" ? undefined : env[name];
    const parsed = (schema as z.ZodType).safeParse(raw);
    if (parsed.success) read[name] = parsed.data;
    else problems.push(`${name}=${JSON.stringify(raw)}: ${parsed.error.issues.map((issue) => issue.message).join("; ")}`);
  }
  if (problems.length) throw new ConfigError(`Invalid setting${problems.length > 1 ? "s" : ""}: ${problems.join(", ")}`);
  const e = read as Env;
  const embedded = !e.DATABASE_URL;
  const llmProvider = e.LLM_PROVIDER ?? (e.OPENAI_BASE_URL || e.OPENAI_API_KEY ? "openai" : "local");
  const embeddingsProvider = e.EMBEDDINGS_PROVIDER ?? llmProvider;
  const chatModel = e.CHAT_MODEL ?? (llmProvider === "local" ? LOCAL_CHAT_MODEL : "gpt-4o-mini");
  const chatModels = [chatModel, ...(e.CHAT_MODELS ?? "").split(",").map((m) => m.trim()).filter(Boolean)];
  return {
    port: e.PORT,
    host: e.HOST,
    publicBaseUrl: e.PUBLIC_BASE_URL,
    databaseUrl: e.DATABASE_URL,
    dataDir: resolve(e.PERSONA_DATA_DIR),
    embeddedDbPort: e.EMBEDDED_DB_PORT,
    embeddedDbInMemory: e.EMBEDDED_DB_IN_MEMORY,
    databasePoolMax: e.DATABASE_POOL_MAX,
    logLevel: e.LOG_LEVEL,
    logPretty: e.LOG_PRETTY,
    worker: {
      enabled: e.WORKER_ENABLED,
      concurrency: e.WORKER_CONCURRENCY,
      pollIntervalMs: e.WORKER_POLL_INTERVAL_MS ?? (embedded ? 500 : 2000),
    },
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    trustProxy: e.TRUST_PROXY,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    validateResponses: e.VALIDATE_RESPONSES,
    jwtSecret: e.JWT_SECRET,
    secretsKey: e.SECRETS_KEY,
    smtpUrl: e.SMTP_URL,
    mailFrom: e.MAIL_FROM,
    authAttemptsPerIp: e.AUTH_ATTEMPTS_PER_IP,
    authAttemptsPerEmail: e.AUTH_ATTEMPTS_PER_EMAIL,
    llm: {
      provider: llmProvider,
      baseUrl: e.OPENAI_BASE_URL,
      apiKey: e.OPENAI_API_KEY,
      model: chatModel,
      models: [...new Set(chatModels)],
      contextTokens: e.CHAT_CONTEXT_TOKENS,
      maxOutputTokens: e.CHAT_MAX_OUTPUT_TOKENS,
      timeoutMs: e.LLM_TIMEOUT_MS,
      maxRetries: e.LLM_MAX_RETRIES,
    },
    embeddings: {
      provider: embeddingsProvider,
      baseUrl: e.OPENAI_BASE_URL,
      apiKey: e.OPENAI_API_KEY,
      model: e.EMBEDDINGS_MODEL ?? (embeddingsProvider === "local" ? LOCAL_EMBEDDINGS_MODEL : "text-embedding-3-small"),
      batchSize: e.EMBEDDINGS_BATCH_SIZE,
    },
    knowledgeContextChunks: e.KNOWLEDGE_CONTEXT_CHUNKS,
    streamKeepAliveMs: e.STREAM_KEEPALIVE_MS,
    webhooks: { allowPrivateUrls: e.WEBHOOKS_ALLOW_PRIVATE_URLS, timeoutMs: e.WEBHOOKS_TIMEOUT_MS, retryBaseMs: e.WEBHOOKS_RETRY_BASE_MS },
    ...overrides,
  };
}
