import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { extname, resolve } from "node:path";
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

/** Comma-separated postgres:// URLs (none when unset). */
const postgresUrlList = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const urls = (value ?? "").split(",").map((part) => part.trim()).filter(Boolean);
    for (const url of urls) if (!/^postgres(ql)?:\/\//.test(url) || !URL.canParse(url)) ctx.addIssue({ code: "custom", message: "each must be a postgres:// URL" });
    return urls;
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
  DATABASE_POOLER: { key: "databasePooler", schema: z.enum(["none", "transaction"]).default("none"), doc: "What `DATABASE_URL` reaches: `none` (PostgreSQL itself, or a pooler in session mode) or `transaction` (PgBouncer or another pooler in transaction mode). With `transaction`, `DATABASE_LISTEN_URL` is required and named prepared statements default to off. See docs/operations.md, \"Running on several machines\"." },
  DATABASE_LISTEN_URL: { key: "databaseListenUrl", schema: z.string().regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL").optional(), doc: "A direct (session) connection to the same database as `DATABASE_URL`, for what a transaction-mode pooler cannot carry: LISTEN (reply wake-ups and stops, room events, credential invalidation), the job worker's LISTEN and its session advisory locks. Default: `DATABASE_URL`." },
  DATABASE_REPLICA_URLS: { key: "databaseReplicaUrls", schema: postgresUrlList, doc: "Comma-separated connection URLs of hot standbys of `DATABASE_URL` (streaming replication). Reads that tolerate lag (explore, marketplace, profiles, feeds, search, lists) go to one that has replayed the caller's own writes, else to the primary. See docs/operations.md, \"Read replicas\"." },
  DATABASE_REPLICA_MAX_LAG_MS: { key: "databaseReplicaMaxLagMs", schema: int(100, 600_000).default(2_000), doc: "A replica further behind the primary than this takes no reads; a caller's reads stay on the primary this long after each request of theirs that may write." },
  DATABASE_PREPARED_STATEMENTS: { key: "databasePreparedStatements", schema: bool.optional(), doc: "Named prepared statements (the chat turn's large statements are prepared once per connection). Default: on, off with `DATABASE_POOLER=transaction` (PgBouncer before 1.21 cannot carry them; 1.21 and later with `max_prepared_statements` set can: then set `true`). The cost of off is measured by `node bench/pooler.ts`." },
  LOG_LEVEL: { key: "logLevel", schema: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"), doc: "pino log level." },
  LOG_PRETTY: { key: "logPretty", schema: bool.default(false), doc: "Human-readable logs instead of JSON lines (development)." },
  WORKER_ENABLED: { key: "worker.enabled", schema: bool.default(true), doc: "Run the job worker inside the API process (`persona serve --no-worker` sets false)." },
  WORKER_CONCURRENCY: { key: "worker.concurrency", schema: int(1, 100).default(4), doc: "Jobs run at once per worker process." },
  WORKER_POLL_INTERVAL_MS: { key: "worker.pollIntervalMs", schema: int(50, 60_000).optional(), doc: "How often the worker polls for jobs; default 2000, or 500 on the embedded database (which has no LISTEN/NOTIFY)." },
  WORKER_STALL_MS: { key: "worker.stallMs", schema: int(1_000, 86_400_000).default(120_000), doc: "`/readyz` reports this process's worker `stalled` (503) when a job it could run has been due for longer than this while the worker started none and runs none. See docs/operations.md (Monitoring)." },
  METRICS_PORT: { key: "metrics.port", schema: int(0, 65535).default(0), doc: "Port of a separate listener serving Prometheus metrics at `/metrics`, without a credential (keep it private: see METRICS_HOST); with `persona serve --processes N` the primary serves it for every process. 0 turns it off. See README (Monitoring)." },
  METRICS_HOST: { key: "metrics.host", schema: z.string().min(1).default("127.0.0.1"), doc: "Address of the METRICS_PORT listener; loopback unless a scraper elsewhere must reach it." },
  METRICS_TOKEN: { key: "metrics.token", schema: z.string().min(32, "must be at least 32 characters").optional(), doc: "Also serve `/metrics` on the main listener, to a scraper that sends `Authorization: Bearer <this token>` (401 otherwise). Unset: `/metrics` there is an unknown path (404)." },
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
  MODELS_FILE: { key: "modelsFile", schema: z.string().min(1).optional(), doc: "The model registry: a JSON or YAML file (by its extension) of the models personas may use, each with its provider, base URL, API key variable, context window, prices, capabilities and fallbacks; checked at start. Unset: `CHAT_MODEL` and `CHAT_MODELS` on `OPENAI_BASE_URL` are the registry. See README (Models)." },
  CHAT_MODEL: { key: "llm.model", schema: z.string().min(1).optional(), doc: "Default model of new personas (with `MODELS_FILE`, one of its models; default the file's `default`). Default: `gpt-4o-mini`, or `local-offline-v1` with the local provider." },
  CHAT_MODELS: { key: "llm.models", schema: z.string().min(1).optional(), doc: "Without `MODELS_FILE`: comma-separated models a persona may use (400 otherwise), all on `OPENAI_BASE_URL`. Default: just `CHAT_MODEL`." },
  CHAT_CONTEXT_TOKENS: { key: "llm.contextTokens", schema: int(512, 2_000_000).optional(), doc: "Without `MODELS_FILE`: the context window of the models of `CHAT_MODELS` (default 8192). With it: a cap on every model's window. Either way it sets the longest message the server takes before it knows the persona (with it unset, the largest model's)." },
  CHAT_MAX_OUTPUT_TOKENS: { key: "llm.maxOutputTokens", schema: int(16, 200_000).optional(), doc: "Without `MODELS_FILE`: most tokens a reply may have (default 1024). With it: a cap on every model's `max_output_tokens`." },
  PROVIDER_CONNECTIONS: { key: "connections.enabled", schema: bool.default(true), doc: "Let users register their own OpenAI-compatible provider connections (bring your own key) and run their chats on them; `false` answers 503 to the connection operations and runs every reply on the registry's models." },
  PROVIDER_CONNECTIONS_ALLOW_PRIVATE_URLS: { key: "connections.allowPrivateUrls", schema: bool.default(false), doc: "Let provider connections use `http://` and loopback, private or link-local addresses (a model server on the operator's own network, tests). Otherwise they must be HTTPS and resolve to public addresses, checked at registration and at every connection." },
  PROVIDER_CONNECTIONS_COUNT_QUOTA: { key: "connections.countAgainstQuota", schema: bool.default(false), doc: "Count replies on a user's own provider connection against their plan's monthly messages. Default: they do not count (they cost the server nothing); usage reports them apart either way." },
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
  MODERATION_PROVIDER: { key: "moderation.provider", schema: z.enum(["none", "wordlist", "openai"]).default("none"), doc: "Checks new public personas, reviews, room messages and display names: `none` (nothing is checked, nothing leaves the machine), `wordlist` (offline: the word list the service ships, plus `MODERATION_WORDLIST`) or `openai` (OpenAI's moderation endpoint: `MODERATION_BASE_URL`, else `OPENAI_BASE_URL`). See README (Trust and safety)." },
  MODERATION_ACTION: { key: "moderation.action", schema: z.enum(["hold", "refuse"]).default("hold"), doc: "What becomes of flagged content: `hold` (a persona or review is saved but hidden, and waits in the review queue) or `refuse` (400 `content_flagged`). Room messages and display names are refused either way." },
  MODERATION_CHECK_REPLIES: { key: "moderation.checkReplies", schema: bool.default(false), doc: "Also check every model reply (conversations, rooms, chat-platform bots, embeds, the OpenAI-compatible door) with the moderation provider before it is stored: a flagged reply is not stored and the send answers 502 `reply_flagged` (a stream ends with that `error`; the OpenAI-compatible door answers `finish_reason: content_filter`). Off by default; needs `MODERATION_PROVIDER`." },
  MODERATION_WORDLIST: { key: "moderation.wordList", schema: z.string().min(1).optional(), doc: "A file of the operator's own words or phrases for the `wordlist` provider, one per line (`#` starts a comment), added to the list the service ships." },
  MODERATION_BASE_URL: { key: "moderation.baseUrl", schema: z.url().optional(), doc: "Base URL of the `openai` moderation provider. Unset: `OPENAI_BASE_URL` (or api.openai.com)." },
  MODERATION_API_KEY: { key: "moderation.apiKey", schema: z.string().min(1).optional(), doc: "API key of the `openai` moderation provider. Unset: `OPENAI_API_KEY`, when it reaches the same server as chat." },
  MODERATION_MODEL: { key: "moderation.model", schema: z.string().min(1).default("omni-moderation-latest"), doc: "Model of the `openai` moderation provider." },
  MATURE_CONTENT: { key: "safety.matureContent", schema: z.enum(["opt_in", "off"]).default("opt_in"), doc: "Whether accounts may see personas and listings rated `mature`: `opt_in` (an account that turned `show_mature` on sees them in explore, the marketplace, the feed and the model list) or `off` (everyone sees `general` only)." },
  REPORTS_PER_HOUR: { key: "safety.reportsPerHour", schema: int(1, 10_000).default(10), doc: "Reports one account may file an hour; more get 429." },
  SAFETY_EVENTS_ACCOUNT: { key: "safety.eventsAccount", schema: z.string().min(1).optional(), doc: "The account (username, e-mail or id) whose webhooks receive `report.created`, `content.taken_down` and `account.suspended`, for an operator's own tooling. Unset: those events are not recorded." },
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
function derive(read: Read, env: Record<string, string | undefined> = {}) {
  const embedded = !read.databaseUrl;
  const llmProvider = read.llm.provider ?? (read.llm.baseUrl || read.llm.apiKey ? "openai" : "local");
  // Only chat follows OPENAI_*: a chat-only server (Ollama, llama.cpp) must not take the rest (issue 34, item 9).
  const embeddingsProvider = read.embeddings.provider ?? "local";
  const chatModel = read.llm.model ?? (llmProvider === "local" ? LOCAL_CHAT_MODEL : "gpt-4o-mini");
  const chatModels = [chatModel, ...(read.llm.models ?? "").split(",").map((m) => m.trim()).filter(Boolean)];
  return {
    dataDir: resolve(read.dataDir),
    // A pooler in transaction mode hands each transaction to any server connection, where a
    // statement prepared by another transaction is unknown (PgBouncer before 1.21).
    databasePreparedStatements: read.databasePreparedStatements ?? read.databasePooler !== "transaction",
    worker: { ...read.worker, pollIntervalMs: read.worker.pollIntervalMs ?? (embedded ? 500 : 2000) },
    llm: {
      ...read.llm,
      provider: llmProvider,
      /** The default model of new personas without a models file (the registry's `defaultId` says it either way). */
      model: chatModel,
      /** CHAT_MODEL as set: with a models file, it chooses the default among the file's models. */
      ...(read.llm.model !== undefined ? { modelChosen: read.llm.model } : {}),
      /** Models a persona may use without a models file; always includes `model`. */
      models: [...new Set(chatModels)],
      /** The context window of the models of `CHAT_MODELS` (and the longest message's basis without a models file). */
      contextTokens: read.llm.contextTokens ?? 8192,
      /** CHAT_CONTEXT_TOKENS when set: caps every registry model's window. */
      ...(read.llm.contextTokens !== undefined ? { contextTokensCap: read.llm.contextTokens } : {}),
      /** Most tokens of a reply of the models of `CHAT_MODELS`. */
      maxOutputTokens: read.llm.maxOutputTokens ?? 1024,
      /** CHAT_MAX_OUTPUT_TOKENS when set: caps every registry model's `max_output_tokens`. */
      ...(read.llm.maxOutputTokens !== undefined ? { maxOutputTokensCap: read.llm.maxOutputTokens } : {}),
      /** The models file as read (its entries are checked by server/toolkit/models/), and the API keys it names. */
      ...modelsSourceOf(read.modelsFile, env),
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
    moderation: { ...read.moderation, ...endpointOf(read.moderation, read.llm) },
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

/** A transaction-mode pooler cannot hold a LISTEN or a session lock: those need a direct connection. */
function checkPooler(read: Read): void {
  if (read.databaseListenUrl && !read.databaseUrl) throw new ConfigError("Invalid setting: DATABASE_LISTEN_URL is a second connection to DATABASE_URL's database; set DATABASE_URL too");
  if (read.databaseReplicaUrls.length > 0 && !read.databaseUrl) throw new ConfigError("Invalid setting: DATABASE_REPLICA_URLS are standbys of DATABASE_URL's PostgreSQL; set DATABASE_URL too (the embedded database has no replicas)");
  if (read.databasePooler === "transaction" && !read.databaseUrl) throw new ConfigError("Invalid setting: DATABASE_POOLER=transaction describes DATABASE_URL, which is not set");
  if (read.databasePooler === "transaction" && !read.databaseListenUrl) {
    throw new ConfigError(
      "Invalid settings: DATABASE_POOLER=transaction needs DATABASE_LISTEN_URL, a direct connection to PostgreSQL (not through the pooler) for LISTEN and session locks",
    );
  }
}

/** With a models file, the file lists the models: CHAT_MODELS would be a second list. */
function checkModelSettings(read: Read): void {
  if (read.modelsFile && read.llm.models) {
    throw new ConfigError("Invalid settings: CHAT_MODELS lists models for a server without a models file; with MODELS_FILE, list them in the file");
  }
}

/** What MODELS_FILE holds: its parsed document, and the values of the environment variables its entries name as `api_key_env`. */
export interface ModelsSource {
  path: string;
  document: unknown;
  keys: Readonly<Record<string, string>>;
}

/**
 * Reads the models file: JSON, or YAML when it ends in `.yaml` or `.yml` (the `yaml` package,
 * loaded only then). Its entries are checked by the registry (server/toolkit/models/), which needs
 * the API keys they name: read here, since nothing else reads the environment.
 */
function readModelsFile(path: string | undefined, env: Record<string, string | undefined>): ModelsSource | undefined {
  if (path === undefined) return undefined;
  const absolute = resolve(path);
  let text: string;
  try {
    text = readFileSync(absolute, "utf8");
  } catch (error) {
    throw new ConfigError(`Invalid setting: MODELS_FILE=${JSON.stringify(path)} cannot be read (${(error as NodeJS.ErrnoException).code ?? "unreadable"})`);
  }
  const yaml = /^\.ya?ml$/i.test(extname(absolute));
  let document: unknown;
  try {
    document = yaml ? parseYaml(text) : JSON.parse(text);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`Invalid setting: MODELS_FILE=${JSON.stringify(path)} is not valid ${yaml ? "YAML" : "JSON"}: ${(error as Error).message.split("\n")[0]}`);
  }
  const keys: Record<string, string> = {};
  const models = (document as { models?: unknown } | null)?.models;
  for (const entry of Array.isArray(models) ? models : []) {
    const name = (entry as { api_key_env?: unknown } | null)?.api_key_env;
    if (typeof name === "string" && /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && env[name]) keys[name] = env[name];
  }
  return { path: absolute, document, keys };
}

function modelsSourceOf(path: string | undefined, env: Record<string, string | undefined>): { modelsSource?: ModelsSource } {
  const source = readModelsFile(path, env);
  return source ? { modelsSource: source } : {};
}

function parseYaml(text: string): unknown {
  let yaml: { parse: (text: string) => unknown };
  try {
    yaml = createRequire(import.meta.url)("yaml") as typeof yaml;
  } catch {
    throw new ConfigError("Invalid setting: MODELS_FILE is YAML, which needs the `yaml` package (npm install yaml); or write the file as JSON");
  }
  return yaml.parse(text);
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
  checkPooler(read);
  checkBillingOrigins(read);
  checkModelSettings(read);
  return { ...read, ...derive(read, env), ...overrides };
}
