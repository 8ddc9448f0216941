import { LRUCache } from "lru-cache";
import type { Logger } from "../../logger.ts";
import type { ModelEntry, ModelRegistry } from "../../models/index.ts";
import { UpstreamError } from "../errors.ts";
import { OPENAI_DEFAULT_BASE_URL } from "../../config.ts";
import { LocalChatModel } from "./local.ts";
import type { ChatCompletion, ChatModelProvider, ChatRequest, ChatStreamChunk, ConnectionEndpoint, ModelOptions, UnsupportedOption } from "./types.ts";

export interface RouterSettings {
  timeoutMs: number;
  maxRetries: number;
  /** PROVIDER_CONNECTIONS_ALLOW_PRIVATE_URLS: whether a user's connection may reach private addresses. */
  connectionsAllowPrivate: boolean;
}

/** One try of a call: the model, who serves it, the name the upstream knows it by. */
interface Attempt {
  entry: ModelEntry;
  provider: ChatModelProvider;
  upstreamModel: string;
  ownKey: boolean;
}

/** Clients of users' connections kept: one per connection and version, the least recently used dropped. */
const CONNECTION_CLIENTS = 500;

/**
 * The chat model of the registry (issue 40): a call names a registry model (`request.model`) and
 * goes to the provider that serves it, under the name its upstream knows, capped to its output;
 * or, with `request.connection`, to the user's own provider with their key and nowhere else. A
 * model that fails before its first token (no answer, 429, 5xx) hands the call to its fallbacks in
 * order; `request.onRoute` learns which model answered. A failure names the models, never the
 * upstreams' own words (docs/adr/0366).
 */
export class RegistryChatModel implements ChatModelProvider {
  readonly name: string;
  readonly #registry: ModelRegistry;
  readonly #settings: RouterSettings;
  readonly #log: Logger | undefined;
  readonly #providers = new Map<string, ChatModelProvider>();
  readonly #connections = new LRUCache<string, ChatModelProvider>({ max: CONNECTION_CLIENTS });

  constructor(registry: ModelRegistry, settings: RouterSettings, log?: Logger) {
    this.#registry = registry;
    this.#settings = settings;
    this.#log = log;
    // The log line of the providers names what serves chat: as before for the chat settings' one upstream.
    this.name = registry.source === "settings" ? registry.default.provider : "registry";
  }

  /**
   * What the offline model of a server without a models file cannot honour, as before the
   * registry; a file's models are checked by their capabilities where the persona's model is
   * known (the OpenAI-compatible door).
   */
  refuses(options: ModelOptions): UnsupportedOption | undefined {
    return this.#registry.source === "settings" && this.#registry.default.provider === "local" ? LocalChatModel.prototype.refuses(options) : undefined;
  }

  async complete(request: ChatRequest): Promise<ChatCompletion> {
    const attempts = await this.#attempts(request);
    const failures: unknown[] = [];
    for (const [index, attempt] of attempts.entries()) {
      try {
        const completion = await attempt.provider.complete(this.#call(request, attempt));
        routed(request, attempts, index);
        return completion;
      } catch (error) {
        if (!this.#fallsBack(error, request, attempts, index)) throw failed(error, failures, attempts);
        failures.push(error);
      }
    }
    throw new Error("unreachable: the last attempt answers or throws");
  }

  async *stream(request: ChatRequest): AsyncIterable<ChatStreamChunk> {
    const attempts = await this.#attempts(request);
    const failures: unknown[] = [];
    for (const [index, attempt] of attempts.entries()) {
      const call = this.#call(request, attempt);
      const chunks = (attempt.entry.capabilities.streaming ? attempt.provider.stream(call) : wholeAsStream(attempt.provider, call))[Symbol.asyncIterator]();
      let first: IteratorResult<ChatStreamChunk>;
      try {
        first = await chunks.next();
      } catch (error) {
        if (!this.#fallsBack(error, request, attempts, index)) throw failed(error, failures, attempts);
        failures.push(error);
        continue;
      }
      routed(request, attempts, index);
      // Once the model has answered, what follows is its own: a failure now is no fallback's.
      let done = false;
      try {
        for (let result = first; !result.done; result = await chunks.next()) yield result.value;
        done = true;
      } finally {
        if (!done) await chunks.return?.();
      }
      return;
    }
  }

  /** The model, then its fallbacks; or the user's own connection alone. */
  async #attempts(request: ChatRequest): Promise<Attempt[]> {
    const entry = this.#registry.resolve(request.model);
    if (request.connection) {
      return [{ entry, provider: await this.#connectionProvider(request.connection, entry), upstreamModel: request.connection.model ?? entry.upstreamModel, ownKey: true }];
    }
    const models = entry.fallbacks.length === 0 ? [entry] : [entry, ...entry.fallbacks.map((id) => this.#registry.resolve(id))];
    // Every call but a model's first finds its providers made.
    const providers = await Promise.all(models.map((model) => this.#providers.get(providerKey(model)) ?? this.#providerOf(model)));
    return models.map((model, index) => ({ entry: model, provider: providers[index]!, upstreamModel: model.upstreamModel, ownKey: false }));
  }

  /** The request as the attempt's provider gets it: the upstream's name for the model, the output capped to the model's. */
  #call(request: ChatRequest, attempt: Attempt): ChatRequest {
    const { connection: _connection, onRoute: _onRoute, ...call } = request;
    const most = this.#registry.limits(attempt.entry).maxOutputTokens;
    return { ...call, model: attempt.upstreamModel, maxOutputTokens: Math.min(request.maxOutputTokens ?? most, most) };
  }

  /** Whether a failure before the first token hands the call to the next model: no answer, 429 or 5xx, and a next model to ask. */
  #fallsBack(error: unknown, request: ChatRequest, attempts: Attempt[], index: number): boolean {
    const next = attempts[index + 1];
    if (!next || request.signal?.aborted || !(error instanceof UpstreamError)) return false;
    const status = error.status;
    if (status !== undefined && status !== 429 && status < 500) return false;
    this.#log?.warn({ model: attempts[index]!.entry.id, fallback: next.entry.id, status }, "the model failed before answering; its fallback is asked");
    return true;
  }

  /**
   * The provider of a registry model. The chat settings' models share their one upstream (and its
   * messages, which name the settings); a file's model has its own, whose failures name the model.
   */
  async #providerOf(entry: ModelEntry): Promise<ChatModelProvider> {
    const key = providerKey(entry);
    let provider = this.#providers.get(key);
    if (!provider) {
      const settings = { baseUrl: entry.baseUrl, apiKey: entry.apiKey, maxOutputTokens: entry.maxOutputTokens, timeoutMs: this.#settings.timeoutMs, maxRetries: this.#settings.maxRetries };
      const made =
        entry.provider === "local"
          ? new LocalChatModel()
          : new (await openaiModule()).OpenAIChatModel(
              settings,
              this.#log,
              entry.source === "file" ? { failures: await this.#reporter(`The model \`${entry.id}\``, { model: entry.id, server: origin(entry.baseUrl) }), tokenizer: entry.tokenizer } : {},
            );
      // Two first calls at once make one provider each: the first one kept is the one used.
      provider = this.#providers.get(key) ?? made;
      this.#providers.set(key, provider);
    }
    return provider;
  }

  /** The provider of a user's connection: its URL (checked by the SSRF guard at every connection), its key, its failures named after it. */
  async #connectionProvider(connection: ConnectionEndpoint, entry: ModelEntry): Promise<ChatModelProvider> {
    const allowPrivate = this.#settings.connectionsAllowPrivate;
    const { guardedFetchOptions, refusedLiteral } = await import("./guarded-fetch.ts");
    const blocked = refusedLiteral(connection.baseUrl, allowPrivate);
    if (blocked) return refusing(new UpstreamError(`The provider connection \`${connection.name}\` points at an address that is not allowed (${blocked.message})`));
    const key = `${connection.id}:${connection.version}`;
    let provider = this.#connections.get(key);
    if (!provider) {
      provider = new (await openaiModule()).OpenAIChatModel(
        { baseUrl: connection.baseUrl, apiKey: connection.apiKey, maxOutputTokens: entry.maxOutputTokens, timeoutMs: this.#settings.timeoutMs, maxRetries: this.#settings.maxRetries },
        this.#log,
        { failures: await this.#reporter(`The provider connection \`${connection.name}\``, { connection: connection.id }), tokenizer: entry.tokenizer, fetchOptions: guardedFetchOptions(allowPrivate) },
      );
      this.#connections.set(key, provider);
    }
    return provider;
  }

  /**
   * How a provider of the registry reports a failure: our message naming `what` (the model, or the
   * user's connection) with the status and a short code, never the upstream's text (which can echo a
   * key); a warning in the log with `fields` (never a key).
   */
  async #reporter(what: string, fields: Record<string, string>): Promise<(error: unknown) => UpstreamError> {
    const { providerError } = await import("../openai-client.ts");
    return (error) => {
      const failure =
        error instanceof UpstreamError ? new UpstreamError(error.message.replace(/^The model provider/, what), error.status, { cause: error }) : providerError(error, what);
      this.#log?.warn({ capability: "chat", ...fields, status: failure.status }, failure.message);
      return failure;
    };
  }
}

/** Tells the caller which model answered. */
function routed(request: ChatRequest, attempts: Attempt[], index: number): void {
  const attempt = attempts[index]!;
  request.onRoute?.({ modelId: attempt.entry.id, ...(index > 0 ? { fallbackFrom: attempts[0]!.entry.id } : {}), ownKey: attempt.ownKey });
}

/** The error of a call whose every model failed: the one failure as it is, or one naming each model tried. */
function failed(error: unknown, earlier: unknown[], attempts: Attempt[]): unknown {
  if (earlier.length === 0 || !(error instanceof UpstreamError)) return error;
  const tried = attempts.slice(1, earlier.length + 1).map((attempt) => `\`${attempt.entry.id}\``);
  const reasons = [...earlier, error].map((failure) => (failure instanceof Error ? failure.message.replace(/\.$/, "") : String(failure)));
  return new UpstreamError(
    `The model \`${attempts[0]!.entry.id}\` and its fallback${tried.length > 1 ? "s" : ""} ${tried.join(", ")} failed before answering: ${reasons.join("; ")}`,
    error.status,
    { cause: error },
  );
}

/** A model that does not stream: its whole answer as one piece of a stream. */
async function* wholeAsStream(provider: ChatModelProvider, request: ChatRequest): AsyncGenerator<ChatStreamChunk> {
  const completion = await provider.complete(request);
  for (const [index, call] of (completion.toolCalls ?? []).entries()) yield { type: "tool_call", call: { index, id: call.id, name: call.name, arguments: call.arguments } };
  if (completion.content) yield { type: "delta", content: completion.content };
  yield { type: "usage", usage: completion.usage, ...(completion.finishReason ? { finishReason: completion.finishReason } : {}) };
}

/** A provider whose every call fails with `error` (a connection the guard refuses before any call). */
function refusing(error: UpstreamError): ChatModelProvider {
  return {
    name: "refused",
    complete: () => Promise.reject(error),
    // eslint-disable-next-line require-yield -- it fails before its first chunk
    stream: async function* () {
      throw error;
    },
  };
}

const origin = (baseUrl: string | undefined) => new URL(baseUrl ?? OPENAI_DEFAULT_BASE_URL).origin;

/** The chat settings' models share their one upstream; a file's model has a provider of its own. */
const providerKey = (entry: ModelEntry) => (entry.source === "settings" ? `settings:${entry.provider}` : `file:${entry.id}`);

/**
 * The `openai` package's provider, loaded when a model first needs it: a server on the offline
 * model alone never loads the package (server/toolkit/providers/index.ts).
 */
let openai: Promise<typeof import("./openai.ts")> | undefined;
const openaiModule = () => (openai ??= import("./openai.ts"));
