import { resolve } from "node:path";
import { z } from "zod";

/**
 * Every setting of the service, read once from the environment and validated here. Nothing else
 * reads `process.env`. The README's settings table mirrors `settings` below, and `Config` is typed
 * from it: an entry names the environment variable, the `key` it takes in `Config` (`group.field`
 * nests one level), its schema (type, limits, default) and its documentation.
 */
const bool = z
  .enum(["true", "false", "1", "0", "yes", "no"])
  .transform((value) => value === "true" || value === "1" || value === "yes");
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/**
 * Comma-separated exact origins, each as a browser sends it in `Origin` (`https://app.example.com`,
 * `http://localhost:5173`: scheme, host, a port only when not the default, no path or trailing
 * slash), since they are compared byte for byte. `*` is refused (ADR 0306).
 */
const originList = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const origins = new Set<string>();
    for (const item of (value ?? "").split(",").map((part) => part.trim()).filter(Boolean)) {
      const url = URL.canParse(item) ? new URL(item) : undefined;
      const problem =
        item === "*" ? "`*` is not accepted: list each origin that may call the API from a browser"
        : !url || !/^https?:$/.test(url.protocol) ? `${JSON.stringify(item)} is not an http(s) origin`
        : url.origin !== item ? `${JSON.stringify(item)} is not an origin as browsers send it; write ${JSON.stringify(url.origin)}`
        : undefined;
      if (problem) ctx.addIssue({ code: "custom", message: problem });
      else origins.add(item);
    }
    return [...origins];
  });

/**
 * An http(s) URL without query or fragment, kept without its trailing slash: person-facing links are
 * this followed by a path (`/verify-email?token=…`), so a front end under a path prefix works too.
 */
const appBaseUrl = z
  .url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" })
  .optional()
  .refine((value) => value === undefined || (!value.includes("?") && !value.includes("#")), "must have no query or fragment: links append their own path and query")
  .transform((value) => value?.replace(/(?<!\/)\/+$/, ""));

export const settings = {
  PORT: { key: "port", schema: int(0, 65535).default(3000), doc: "HTTP port (0 picks a free one)." },
  HOST: { key: "host", schema: z.string().min(1).default("127.0.0.1"), doc: "Address to listen on; `0.0.0.0` to accept remote clients." },
  PUBLIC_BASE_URL: { key: "publicBaseUrl", schema: z.url().optional(), doc: "URL clients reach the service at, used in links; default `http://HOST:PORT`." },
  APP_BASE_URL: { key: "appBaseUrl", schema: appBaseUrl, doc: "Base URL of your own web front end, where the links sent to people lead: `<APP_BASE_URL>/verify-email?token=…` and `/reset-password?token=…` (e-mails), `/p/<persona id>` (share links), `/marketplace/<listing id>` (publish). Unset: the service's own pages at `PUBLIC_BASE_URL`. API links (images, downloads, the API) always use `PUBLIC_BASE_URL`. See docs/design/pages.md." },
  DATABASE_URL: { key: "databaseUrl", schema: z.string().regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL").optional(), doc: "PostgreSQL 15+ with pgvector. Unset: the embedded PGlite database." },
  PERSONA_DATA_DIR: { key: "dataDir", schema: z.string().min(1).default(".persona"), doc: "Data directory of the embedded default (database in `db/`)." },
  EMBEDDED_DB_IN_MEMORY: { key: "embeddedDbInMemory", schema: bool.default(false), doc: "Keep the embedded database in memory: nothing survives a restart (tests, demos)." },
  EMBEDDED_DB_SOCKET_DIR: { key: "embeddedDbSocketDir", schema: z.string().min(1).optional(), doc: "Directory of the embedded database's Unix socket, private to this user (0700; the database is reachable through no port). Default: `PERSONA_DATA_DIR/db.socket`, or a temporary one with `EMBEDDED_DB_IN_MEMORY`. A second process on the same data, as the same user: `DATABASE_URL=postgres:///postgres?host=<this dir>&port=5432&user=postgres`." },
  DATABASE_POOL_MAX: { key: "databasePoolMax", schema: int(1, 200).default(10), doc: "Connections per process to the database." },
  LOG_LEVEL: { key: "logLevel", schema: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"), doc: "pino log level." },
  LOG_PRETTY: { key: "logPretty", schema: bool.default(false), doc: "Human-readable logs instead of JSON lines (development)." },
  WORKER_ENABLED: { key: "worker.enabled", schema: bool.default(true), doc: "Run the job worker inside the API process (`persona serve --no-worker` sets false)." },
  WORKER_CONCURRENCY: { key: "worker.concurrency", schema: int(1, 100).default(4), doc: "Jobs run at once per worker process." },
  WORKER_POLL_INTERVAL_MS: { key: "worker.pollIntervalMs", schema: int(50, 60_000).optional(), doc: "How often the worker polls for jobs; default 2000, or 500 on the embedded database (which has no LISTEN/NOTIFY)." },
  LOAD_SHED_DELAY_MS: { key: "loadShedDelayMs", schema: int(0, 60_000).default(0), doc: "Answer new requests 429 with Retry-After while the event loop's p99 delay exceeds this many milliseconds (load shedding); 0 turns it off. See docs/operations.md." },
  ADMISSION_MAX_IN_FLIGHT: { key: "admission.maxInFlight", schema: int(0, 100_000).default(64), doc: "Requests worked on at once per process (an open stream stops counting); more wait (ADMISSION_QUEUE, ADMISSION_QUEUE_MS) or get 429 with Retry-After. 0 turns admission control off. See docs/operations.md." },
  ADMISSION_QUEUE: { key: "admission.maxQueue", schema: int(0, 100_000).default(1024), doc: "Requests that may wait for a place beyond ADMISSION_MAX_IN_FLIGHT; more get 429 at once." },
  ADMISSION_QUEUE_MS: { key: "admission.queueMs", schema: int(0, 600_000).default(5_000), doc: "How long a request may wait for a place before it gets 429 with Retry-After." },
  RATE_LIMIT_PER_MINUTE: { key: "rateLimitPerMinute", schema: int(1, 1_000_000).default(600), doc: "Requests per minute per client across all processes: per user for a valid credential (all of a user's keys and logins together), per client address (IPv6 by /64) otherwise." },
  BODY_LIMIT_BYTES: { key: "bodyLimitBytes", schema: int(1024, 100 * 1024 * 1024).default(1024 * 1024), doc: "Largest JSON or form body accepted (uploads have their own limits)." },
  BODY_TIMEOUT_MS: { key: "bodyTimeoutMs", schema: int(1_000, 600_000).default(30_000), doc: "A JSON or form body must arrive within this many milliseconds of the request's headers; a slower one is answered 408 and its connection closed. It holds no admission place meanwhile." },
  UPLOAD_IDLE_TIMEOUT_MS: { key: "uploadIdleTimeoutMs", schema: int(1_000, 600_000).default(30_000), doc: "An upload (multipart body) that sends nothing for this many milliseconds is answered 408 and its connection closed; one that keeps sending may take longer." },
  CORS_ORIGINS: { key: "corsOrigins", schema: originList, doc: "Comma-separated origins whose web pages may call the API from a browser (CORS), each exactly as the browser sends it: `https://app.example.com,http://localhost:5173`. Unset: none, no CORS header is sent. `*` is not accepted. Bearer tokens and API keys only, no cookies: `Access-Control-Allow-Credentials` is never sent. See docs/design/foundations.md." },
  TRUST_PROXY: { key: "trustProxy", schema: bool.default(false), doc: "Take the client IP from `X-Forwarded-For` (behind a reverse proxy)." },
  SHUTDOWN_TIMEOUT_MS: { key: "shutdownTimeoutMs", schema: int(0, 600_000).default(10_000), doc: "How long SIGTERM waits for in-flight requests and jobs before closing." },
  SHUTDOWN_IDLE_GRACE_MS: { key: "shutdownIdleGraceMs", schema: int(0, 60_000).default(1_000), doc: "On SIGTERM, how long a keep-alive connection that is idle is kept open for a request already on its way; one that arrives is served, with `Connection: close`." },
  JWT_SECRET: { key: "jwtSecret", schema: z.string().min(32, "must be at least 32 characters").optional(), doc: "Signs access tokens (HS256). Unset: generated once and kept in the database." },
  SECRETS_KEY: { key: "secretsKey", schema: z.string().min(32, "must be at least 32 characters").optional(), doc: "Encrypts secrets at rest (bot tokens, webhook secrets, e-mails waiting to be sent, stored idempotent answers). Unset: generated once and kept in the database." },
  SMTP_URL: { key: "smtpUrl", schema: z.string().regex(/^smtps?:\/\//, "must be an smtp:// or smtps:// URL").optional(), doc: "Send e-mail through this SMTP server. Unset: e-mails stay in the outbox table (`persona mail`); the log names each one, never its links." },
  MAIL_FROM: { key: "mailFrom", schema: z.string().min(3).default("Persona <no-reply@persona.local>"), doc: "Sender of the service's e-mails." },
  AUTH_ATTEMPTS_PER_IP: { key: "authAttemptsPerIp", schema: int(1, 1_000_000).default(50), doc: "Register, login, account restore, forgot-password and token calls, and account deletions confirmed by password, per client IP per 15 minutes." },
  DEFAULT_PLAN: { key: "defaultPlan", schema: z.enum(["free", "plus", "pro", "creator"]).default("free"), doc: "Plan of new accounts (a self-hosted server without billing may give everyone more; `persona users set-plan` changes one account)." },
  AUTH_ATTEMPTS_PER_EMAIL: { key: "authAttemptsPerEmail", schema: int(1, 1_000_000).default(10), doc: "Login, account restore and forgot-password calls per e-mail address (and account deletions confirmed by password per account) per 15 minutes." },
  LLM_PROVIDER: { key: "llm.provider", schema: z.enum(["openai", "local"]).optional(), doc: "Chat model provider: `openai` (any OpenAI-compatible API) or `local` (the offline deterministic model). Default: `openai` when `OPENAI_BASE_URL` or `OPENAI_API_KEY` is set, else `local`. Only chat follows these: embeddings, speech and images have their own `*_PROVIDER`." },
  OPENAI_BASE_URL: { key: "llm.baseUrl", schema: z.url().optional(), doc: "Base URL of the OpenAI-compatible chat API (e.g. `http://127.0.0.1:11434/v1`). Unset: api.openai.com. Also used by `EMBEDDINGS_PROVIDER`, `SPEECH_PROVIDER` or `IMAGES_PROVIDER` `=openai` without their own `*_BASE_URL`." },
  OPENAI_API_KEY: { key: "llm.apiKey", schema: z.string().min(1).optional(), doc: "API key of the OpenAI-compatible chat API; also sent by an `openai` embeddings, speech or image provider without its own `*_API_KEY` when it reaches the same server (never to another one)." },
  CHAT_MODEL: { key: "llm.model", schema: z.string().min(1).optional(), doc: "Default model of new personas. Default: `gpt-4o-mini`, or `local-offline-v1` with the local provider." },
  CHAT_MODELS: { key: "llm.models", schema: z.string().min(1).optional(), doc: "Comma-separated models a persona may use (400 otherwise). Default: just `CHAT_MODEL`." },
  CHAT_CONTEXT_TOKENS: { key: "llm.contextTokens", schema: int(512, 2_000_000).default(8192), doc: "Token budget of the context sent to the model (instructions, knowledge, history)." },
  CHAT_MAX_OUTPUT_TOKENS: { key: "llm.maxOutputTokens", schema: int(16, 200_000).default(1024), doc: "Most tokens a reply may have." },
  LLM_TIMEOUT_MS: { key: "llm.timeoutMs", schema: int(100, 600_000).default(60_000), doc: "How long a model call may take before it fails with 502 upstream_error." },
  QUOTA_LEASE_SECONDS: { key: "quotaLeaseSeconds", schema: int(0, 86_400).default(0), doc: "How long after a message is reserved its quota lease is checked: given back if the reply was never stored (a crashed process). 0: the model timeout times its attempts plus 60 s." },
  LLM_MAX_RETRIES: { key: "llm.maxRetries", schema: int(0, 10).default(2), doc: "Retries of a model call that failed before answering (429, 5xx, connection errors)." },
  GENERATION_LEASE_MS: { key: "generationLeaseMs", schema: int(1_000, 600_000).default(30_000), doc: "How long a running streamed reply stays held without its process renewing it (renewed every quarter of it); past it, the next reader records the reply as failed: its process died." },
  STREAM_KEEPALIVE_MS: { key: "streamKeepAliveMs", schema: int(100, 600_000).default(15_000), doc: "Interval of the comment line that keeps a chat stream open through proxies." },
  STREAMS_PER_USER: { key: "streamsPerUser", schema: int(1, 100_000).default(20), doc: "Server-sent event streams one user may hold open at once in one API process (room events, reply streams, generation resumes, OpenAI `stream: true`); one more gets 429 `rate_limited` with Retry-After. Counted per process: with N processes a user may hold up to N times this. See docs/operations.md." },
  EMBED_GUEST_MESSAGES_PER_MINUTE: { key: "embeds.guestMessagesPerMinute", schema: int(1, 100_000).default(10), doc: "Messages (and spoken replies) one anonymous visitor of an embedded persona may send a minute; more get 429. See docs/design/embeds.md." },
  EMBED_IP_MESSAGES_PER_MINUTE: { key: "embeds.ipMessagesPerMinute", schema: int(1, 100_000).default(30), doc: "Messages (and spoken replies) all embed visitors from one client address (IPv6 by /64) may send a minute, whichever persona; more get 429." },
  EMBED_GUESTS_PER_IP_PER_HOUR: { key: "embeds.guestsPerIpPerHour", schema: int(1, 100_000).default(20), doc: "New embed visitors (guest tokens) one client address may start an hour; more get 429." },
  EMBEDDINGS_PROVIDER: { key: "embeddings.provider", schema: z.enum(["openai", "local"]).optional(), doc: "Embeddings provider: `openai` (an OpenAI-compatible API: `EMBEDDINGS_BASE_URL`, else `OPENAI_BASE_URL`) or `local` (hashed lexical, no model files). Default: `local`, whatever the chat provider. Documents embedded by one provider are not found by another: re-upload them after a change." },
  EMBEDDINGS_BASE_URL: { key: "embeddings.baseUrl", schema: z.url().optional(), doc: "Base URL of the `openai` embeddings provider. Unset: `OPENAI_BASE_URL` (or api.openai.com)." },
  EMBEDDINGS_API_KEY: { key: "embeddings.apiKey", schema: z.string().min(1).optional(), doc: "API key of the `openai` embeddings provider. Unset: `OPENAI_API_KEY`, when it reaches the same server as chat." },
  EMBEDDINGS_MODEL: { key: "embeddings.model", schema: z.string().min(1).optional(), doc: "Embeddings model. Default: `text-embedding-3-small`, or `local-hashed-lexical-v1` with the local provider." },
  EMBEDDINGS_BATCH_SIZE: { key: "embeddings.batchSize", schema: int(1, 2048).default(64), doc: "Chunks embedded per provider call." },
  KNOWLEDGE_CONTEXT_CHUNKS: { key: "knowledgeContextChunks", schema: int(0, 50).default(4), doc: "Most knowledge chunks put into a reply's context (within the token budget)." },
  KNOWLEDGE_MIN_SIMILARITY: { key: "knowledgeMinSimilarity", schema: z.coerce.number().min(0).max(1).optional(), doc: "Least cosine similarity at which a knowledge chunk counts as relevant on the vector side of retrieval (a chunk may still be found by its words). Default: 0.15 with the `local` embeddings, 0.8 with `text-embedding-ada-002`, 0.3 with other models (set for OpenAI's text-embedding-3; measure another model with `node bench/relevance-floors.ts`)." },
  WEBHOOKS_ALLOW_PRIVATE_URLS: { key: "webhooks.allowPrivateUrls", schema: bool.default(false), doc: "Let webhooks use `http://` and loopback, private or link-local addresses (local development and tests only)." },
  WEBHOOKS_TIMEOUT_MS: { key: "webhooks.timeoutMs", schema: int(100, 60_000).default(5_000), doc: "How long a webhook receiver has to answer 2xx before the attempt counts as failed." },
  WEBHOOKS_RETRY_BASE_MS: { key: "webhooks.retryBaseMs", schema: int(10, 3_600_000).default(10_000), doc: "Delay before a webhook delivery's first retry; the second waits 6 times as long, the third 36 times (each ±25%)." },
  SPEECH_PROVIDER: { key: "speech.provider", schema: z.enum(["openai", "local"]).optional(), doc: "Speech provider: `openai` (text to speech and speech to text through an OpenAI-compatible API: `SPEECH_BASE_URL`, else `OPENAI_BASE_URL`) or `local` (offline Flite voices; speech to text answers 503 provider_unavailable). Default: `local`, whatever the chat provider." },
  SPEECH_BASE_URL: { key: "speech.baseUrl", schema: z.url().optional(), doc: "Base URL of the `openai` speech provider. Unset: `OPENAI_BASE_URL` (or api.openai.com)." },
  SPEECH_API_KEY: { key: "speech.apiKey", schema: z.string().min(1).optional(), doc: "API key of the `openai` speech provider. Unset: `OPENAI_API_KEY`, when it reaches the same server as chat." },
  TTS_MODEL: { key: "speech.ttsModel", schema: z.string().min(1).default("tts-1"), doc: "Text-to-speech model of the `openai` speech provider." },
  STT_MODEL: { key: "speech.sttModel", schema: z.string().min(1).default("whisper-1"), doc: "Speech-to-text model of the `openai` speech provider (asked for `verbose_json`)." },
  IMAGES_PROVIDER: { key: "images.provider", schema: z.enum(["openai", "local", "off"]).optional(), doc: "Image provider: `openai` (an OpenAI-compatible API: `IMAGES_BASE_URL`, else `OPENAI_BASE_URL`), `local` (deterministic procedural PNGs, DiceBear avatars) or `off` (503 provider_unavailable, no automatic avatars). Default: `local`, whatever the chat provider." },
  IMAGES_BASE_URL: { key: "images.baseUrl", schema: z.url().optional(), doc: "Base URL of the `openai` image provider. Unset: `OPENAI_BASE_URL` (or api.openai.com)." },
  IMAGES_API_KEY: { key: "images.apiKey", schema: z.string().min(1).optional(), doc: "API key of the `openai` image provider. Unset: `OPENAI_API_KEY`, when it reaches the same server as chat." },
  IMAGE_MODEL: { key: "images.model", schema: z.string().min(1).default("gpt-image-1"), doc: "Image model of the `openai` image provider (`gpt-image-1`, `dall-e-3`, ...)." },
  AUTO_AVATARS: { key: "images.autoAvatars", schema: bool.default(true), doc: "Give a persona created without `avatar_url` a generated avatar (a job, within seconds)." },
  BLOB_STORE: { key: "blobStore", schema: z.enum(["local", "memory", "s3"]).optional(), doc: "Where generated images are kept: `local` (files under `PERSONA_DATA_DIR/blobs`), `memory` (lost on restart) or `s3` (a bucket, `S3_BUCKET`). Default: `memory` with `EMBEDDED_DB_IN_MEMORY`, else `local`." },
  S3_BUCKET: { key: "s3.bucket", schema: z.string().min(3).max(63).optional(), doc: "Bucket of the `s3` blob store (required with `BLOB_STORE=s3`)." },
  S3_ENDPOINT: { key: "s3.endpoint", schema: z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" }).optional(), doc: "Endpoint of an S3-compatible service (MinIO, R2, ...), addressed path-style. Unset: AWS S3." },
  S3_REGION: { key: "s3.region", schema: z.string().min(1).default("us-east-1"), doc: "Region of the bucket (S3-compatible services often accept any)." },
  S3_ACCESS_KEY_ID: { key: "s3.accessKeyId", schema: z.string().min(1).optional(), doc: "Access key of the `s3` blob store, with `S3_SECRET_ACCESS_KEY`. Unset: the AWS SDK's default chain (environment, profile, instance role)." },
  S3_SECRET_ACCESS_KEY: { key: "s3.secretAccessKey", schema: z.string().min(1).optional(), doc: "Secret key that goes with `S3_ACCESS_KEY_ID`." },
  DISCORD_API_URL: { key: "integrations.discordApiUrl", schema: z.url().default("https://discord.com/api"), doc: "Base URL of the forum platform's (Discord's) REST API; its gateway address is asked of it." },
  TELEGRAM_API_URL: { key: "integrations.telegramApiUrl", schema: z.url().default("https://api.telegram.org"), doc: "Base URL of the messenger platform's (Telegram's) Bot API." },
  SLACK_API_URL: { key: "integrations.slackApiUrl", schema: z.url().default("https://slack.com/api/"), doc: "Base URL of the workspace platform's (Slack's) Web API." },
  SLACK_SIGNING_SECRET: { key: "integrations.slackSigningSecret", schema: z.string().min(1).optional(), doc: "Signing secret of a workspace app shared by every workspace integration that gives none of its own." },
  TELEGRAM_UPDATES: { key: "integrations.telegramUpdates", schema: z.enum(["webhook", "polling"]).optional(), doc: "How messenger bots receive messages: `webhook` (the platform calls `PUBLIC_BASE_URL`, which must be public HTTPS) or `polling` (a worker long-polls for each bot). Default: `webhook` when `PUBLIC_BASE_URL` is HTTPS, else `polling`." },
  PLATFORM_TIMEOUT_MS: { key: "integrations.timeoutMs", schema: int(100, 120_000).default(10_000), doc: "How long one call to a chat platform may take before it counts as failed." },
  INTEGRATIONS_LEASE_MS: { key: "integrations.leaseMs", schema: int(300, 600_000).default(15_000), doc: "Lease of a worker on a forum bot's gateway connection, renewed every third of it; a dead worker's connections are taken over within about 1⅓ of it." },
  NODE_ENV: { key: "nodeEnv", schema: z.enum(["development", "production", "test"]).default("development"), doc: "`production` tightens what outside input may point at (billing return URLs: HTTPS only)." },
  STRIPE_SECRET_KEY: { key: "billing.stripeSecretKey", schema: z.string().min(1).optional(), doc: "Stripe secret key: billing through Stripe. Unset: the offline payments provider (a local checkout page, no money)." },
  STRIPE_WEBHOOK_SECRET: { key: "billing.stripeWebhookSecret", schema: z.string().min(1).optional(), doc: "Signing secret (`whsec_...`) of the Stripe webhook endpoint `POST /v1/billing/webhook`; unset, every event is refused." },
  STRIPE_API_URL: { key: "billing.stripeApiUrl", schema: z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" }).optional(), doc: "Where the Stripe API is reached (a Stripe mock or test fake). Unset: api.stripe.com." },
  BILLING_REDIRECT_ORIGINS: { key: "billing.redirectOrigins", schema: z.string().min(1).optional(), doc: "Comma-separated origins checkout `success_url`/`cancel_url` may point at (e.g. `https://app.example.com`); unset: any http(s) URL, HTTPS only with `NODE_ENV=production`." },
  VALIDATE_RESPONSES: { key: "validateResponses", schema: bool.default(false), doc: "Check every JSON response against the contract (on in tests)." },
} as const;

type Settings = typeof settings;
type Setting = Settings[keyof Settings];
type Key = Setting["key"];
type ValueOf<K extends Key> = z.output<Extract<Setting, { key: K }>["schema"]>;
type Top<K extends Key> = K extends `${infer Group}.${string}` ? Group : K;

/** The settings as read, shaped by their keys: `worker.concurrency` becomes `{ worker: { concurrency } }`. */
type Read = {
  [T in Top<Key>]: T extends Key ? ValueOf<T> : { [K in Key as K extends `${T}.${infer Field}` ? Field : never]: ValueOf<K> };
};

/** Nests the flat `key` paths of the settings table (one level of grouping is all it needs). */
function nest(flat: Record<string, unknown>): Read {
  const nested: Record<string, Record<string, unknown> | unknown> = {};
  for (const [name, value] of Object.entries(flat)) {
    const [group, field] = settings[name as keyof Settings].key.split(".") as [string, string | undefined];
    if (field === undefined) nested[group] = value;
    else ((nested[group] ??= {}) as Record<string, unknown>)[field] = value;
  }
  return nested as Read;
}

/**
 * The settings whose value depends on others (defaults that follow the database kind or the
 * provider, a list from a comma-separated value, a path made absolute). Everything else is the
 * value as read; a new setting needs this only when its default depends on another setting.
 */
function derive(read: Read) {
  const embedded = !read.databaseUrl;
  const llmProvider = read.llm.provider ?? (read.llm.baseUrl || read.llm.apiKey ? "openai" : "local");
  // Only chat follows OPENAI_*: a chat-only server (Ollama, llama.cpp) must not take the rest (issue 34, item 9).
  const embeddingsProvider = read.embeddings.provider ?? "local";
  const chatModel = read.llm.model ?? (llmProvider === "local" ? LOCAL_CHAT_MODEL : "gpt-4o-mini");
  const chatModels = [chatModel, ...(read.llm.models ?? "").split(",").map((m) => m.trim()).filter(Boolean)];
  return {
    dataDir: resolve(read.dataDir),
    worker: { ...read.worker, pollIntervalMs: read.worker.pollIntervalMs ?? (embedded ? 500 : 2000) },
    llm: {
      ...read.llm,
      provider: llmProvider,
      /** The default model of new personas. */
      model: chatModel,
      /** Models a persona may use; always includes `model`. */
      models: [...new Set(chatModels)],
    },
    speech: {
      ...read.speech,
      provider: read.speech.provider ?? "local",
      ...endpointOf(read.speech, read.llm),
    },
    images: {
      ...read.images,
      provider: read.images.provider ?? "local",
      ...endpointOf(read.images, read.llm),
    },
    billing: {
      ...read.billing,
      /** Origins (scheme://host[:port]) the checkout return URLs may use; empty: any. */
      redirectOrigins: (read.billing.redirectOrigins ?? "").split(",").map((o) => o.trim()).filter(Boolean).map((o) => new URL(o).origin),
    },
    blobStore: read.blobStore ?? (read.embeddedDbInMemory ? "memory" : "local"),
    embeddings: {
      ...read.embeddings,
      provider: embeddingsProvider,
      ...endpointOf(read.embeddings, read.llm),
      model: read.embeddings.model ?? (embeddingsProvider === "local" ? LOCAL_EMBEDDINGS_MODEL : "text-embedding-3-small"),
    },
  };
}

/** api.openai.com, where an `openai` provider goes without a base URL. */
export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";

/**
 * Where an `openai` embeddings, speech or image provider is reached: its own base URL, else chat's
 * (`OPENAI_BASE_URL`, else api.openai.com); its own key, else chat's `OPENAI_API_KEY`, but only when
 * both reach the same server: chat's key is never sent to another one.
 */
function endpointOf(own: { baseUrl?: string | undefined; apiKey?: string | undefined }, llm: { baseUrl?: string | undefined; apiKey?: string | undefined }) {
  const same = (url: string | undefined) => (url ?? OPENAI_DEFAULT_BASE_URL).replace(/(?<!\/)\/+$/, "");
  const baseUrl = own.baseUrl ?? llm.baseUrl;
  return { baseUrl, apiKey: own.apiKey ?? (same(baseUrl) === same(llm.baseUrl) ? llm.apiKey : undefined) };
}

type Derived = ReturnType<typeof derive>;

/** The service's settings, typed from the table above: a new setting is one entry there. */
export type Config = Omit<Read, keyof Derived> & Derived;

export const LOCAL_CHAT_MODEL = "local-offline-v1";
export const LOCAL_EMBEDDINGS_MODEL = "local-hashed-lexical-v1";

/**
 * Where users reach the service: `PUBLIC_BASE_URL`, else the address this process listens on (the
 * runtime records the real one once it listens, so `PORT=0` gives a usable link). No trailing slash.
 */
export function publicBaseUrl(config: Pick<Config, "publicBaseUrl" | "host" | "port">): string {
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  return (config.publicBaseUrl ?? `http://${host}:${config.port}`).replace(/(?<!\/)\/+$/, "");
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Settings that are only valid together. */
function checkBlobStore(read: Read): void {
  if (read.blobStore === "s3" && !read.s3.bucket) throw new ConfigError("Invalid setting: S3_BUCKET is required with BLOB_STORE=s3");
  if (!read.s3.accessKeyId !== !read.s3.secretAccessKey) {
    throw new ConfigError("Invalid settings: S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY go together (or neither, for the AWS SDK's default chain)");
  }
}

function checkBillingOrigins(read: Read): void {
  for (const origin of (read.billing.redirectOrigins ?? "").split(",").map((o) => o.trim()).filter(Boolean)) {
    if (!URL.canParse(origin) || !/^https?:$/.test(new URL(origin).protocol)) {
      throw new ConfigError(`Invalid setting: BILLING_REDIRECT_ORIGINS holds ${JSON.stringify(origin)}, which is not an http(s) origin`);
    }
  }
}

/** Reads and validates every setting; a bad value throws a `ConfigError` naming the setting. */
export function loadConfig(env: Record<string, string | undefined> = process.env, overrides: Partial<Config> = {}): Config {
  const problems: string[] = [];
  const values: Record<string, unknown> = {};
  for (const [name, { schema }] of Object.entries(settings)) {
    const raw = env[name] === "" ? undefined : env[name];
    const parsed = (schema as z.ZodType).safeParse(raw);
    if (parsed.success) values[name] = parsed.data;
    else problems.push(`${name}=${JSON.stringify(raw)}: ${parsed.error.issues.map((issue) => issue.message).join("; ")}`);
  }
  if (problems.length) throw new ConfigError(`Invalid setting${problems.length > 1 ? "s" : ""}: ${problems.join(", ")}`);
  const read = nest(values);
  checkBlobStore(read);
  checkBillingOrigins(read);
  return { ...read, ...derive(read), ...overrides };
}
