import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { PNG } from "pngjs";

/**
 * A fake OpenAI-compatible API on loopback, speaking the real wire format (JSON and SSE), so tests
 * drive the real `openai` package. Instant by default (no delays); behaviours make it slow or fail.
 */

export interface ChatBehaviour {
  /** The whole reply. Default: `Echo: <last user message>`. */
  reply?: string;
  /** The reply's stream pieces (overrides `reply`). Default: the reply split after each word. */
  chunks?: string[];
  /** Wait before answering (before the first byte of a stream, or before the JSON body). */
  firstTokenDelayMs?: number;
  /** Wait between content chunks of a stream. */
  chunkDelayMs?: number;
  /** Break the stream after this many content chunks (see `failWith`). */
  failAfterChunks?: number;
  /** How the stream breaks: the socket is destroyed (default), or an `error` object is sent as SSE data. */
  failWith?: "disconnect" | "error-event";
  /** Answer this HTTP status with an OpenAI error body instead of a completion. */
  status?: number;
  /** The error JSON, `{ error: { message, type, code } }`. Default: a generic one for `status`. */
  errorBody?: object;
  /** `Retry-After` header of an error answer. */
  retryAfter?: string;
  /** The finish reason to report. Default: `length` when the reply was cut to `max_tokens` words, else `stop`. */
  finishReason?: "stop" | "length" | "tool_calls" | "content_filter";
  /** Tool calls to answer with (finish reason `tool_calls` unless `finishReason` says otherwise); streamed in two pieces each. */
  toolCalls?: { id: string; name: string; arguments: string }[];
}

export interface EmbeddingsBehaviour {
  status?: number;
  errorBody?: object;
  retryAfter?: string;
  firstTokenDelayMs?: number;
}

export interface SpeechBehaviour {
  status?: number;
  errorBody?: object;
  /** The MP3 bytes to send. Default: bytes derived from the input text. */
  audio?: Uint8Array;
  /** Pieces the audio is sent in. Default 4. */
  chunks?: number;
  /** Send the first piece, then wait for this before sending the rest (shows the client got bytes early). */
  holdAfterFirstChunk?: Promise<void>;
}

export interface TranscriptionBehaviour {
  status?: number;
  errorBody?: object;
  text?: string;
  /** Whisper's verbose_json names the language in English, e.g. `english`. */
  language?: string;
  segments?: { start: number; end: number; avg_logprob: number }[];
}

export interface ImagesBehaviour {
  status?: number;
  errorBody?: object;
  /** How the image comes back. Default `b64_json`. */
  format?: "b64_json" | "url";
  /** The bytes to return instead of a drawn PNG (e.g. something that is not an image). */
  bytes?: Uint8Array;
}

/**
 * The moderation endpoint (`POST /v1/moderations`): a text containing `FLAG:<category>` (e.g.
 * `FLAG:harassment`) is flagged in that category, anything else is not; or an error.
 */
export interface ModerationsBehaviour {
  status?: number;
  errorBody?: object;
}

/** The categories OpenAI's moderation model answers, each false unless flagged. */
const MODERATION_CATEGORIES = ["harassment", "harassment/threatening", "hate", "hate/threatening", "illicit", "illicit/violent", "self-harm", "self-harm/instructions", "self-harm/intent", "sexual", "sexual/minors", "violence", "violence/graphic"];

/** A multipart upload as the fake received it. */
export interface RecordedForm {
  fields: Record<string, string>;
  file?: { field: string; name: string; type: string; size: number };
}

export interface RecordedRequest {
  method: string;
  /** The path without the query, e.g. `/v1/chat/completions`. */
  path: string;
  /** The parsed JSON body (undefined when there was none or it was not JSON). */
  body: unknown;
  headers: IncomingHttpHeaders;
  /** True when the client closed the connection before the response ended. */
  aborted: boolean;
  /** A multipart body, parsed (transcriptions). */
  form?: RecordedForm;
}

export interface BehaviourControl<B> {
  /** Use `behaviour` for the next call only (queued: several `next` calls apply in order). */
  next(behaviour: B): void;
  /** Use `behaviour` for every call without a queued `next` one. */
  always(behaviour: B): void;
}

/** What an OpenAI-compatible server may serve (Ollama or llama.cpp serve chat and little else). */
export type FakeCapability = "chat" | "embeddings" | "speech" | "transcriptions" | "images" | "moderations";

export interface FakeOpenAIOptions {
  /** Vector size when the request sends no `dimensions`. Default 1536 (text-embedding-3-small). */
  embeddingDimensions?: number;
  /** The routes it serves; the others answer 404 `unknown_url`, as a chat-only server does. Default: all. */
  serves?: FakeCapability[];
}

export interface FakeOpenAI {
  /** `http://127.0.0.1:PORT/v1`, the `baseURL` of the `openai` package. */
  baseUrl: string;
  /** Every request received, in order (the array is cleared by `reset`, never replaced). */
  requests: RecordedRequest[];
  chat: BehaviourControl<ChatBehaviour>;
  embeddings: BehaviourControl<EmbeddingsBehaviour>;
  speech: BehaviourControl<SpeechBehaviour>;
  transcriptions: BehaviourControl<TranscriptionBehaviour>;
  images: BehaviourControl<ImagesBehaviour>;
  moderations: BehaviourControl<ModerationsBehaviour>;
  /** Forget behaviours and recorded requests. */
  reset(): void;
  /** Resolves with the next request the client aborts (or one aborted earlier and not yet awaited). */
  waitForAbort(timeoutMs?: number): Promise<RecordedRequest>;
  /** Stops listening and destroys open sockets. */
  close(): Promise<void>;
}

interface ChatMessage {
  role?: string;
  content?: unknown;
}

interface ChatBody {
  model?: string;
  messages?: ChatMessage[];
  stream?: boolean;
  stop?: string | string[];
  max_tokens?: number;
  max_completion_tokens?: number;
  stream_options?: { include_usage?: boolean };
}

interface EmbeddingsBody {
  model?: string;
  input?: string | string[];
  dimensions?: number;
  encoding_format?: "float" | "base64";
}

/**
 * A deterministic hashed bag-of-words vector: lower-cased word tokens hashed (FNV-1a) into
 * `dimensions` buckets, L2-normalised, so texts sharing words are close in cosine distance.
 */
export function hashedEmbedding(text: string, dimensions: number): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const word of wordsOf(text)) vector[fnv1a(word) % dimensions]! += 1;
  const norm = Math.sqrt(vector.reduce((sum, v) => sum + v * v, 0));
  // An empty text still gets a unit vector: a zero vector has no cosine distance.
  if (norm === 0) {
    vector[0] = 1;
    return vector;
  }
  return vector.map((v) => v / norm);
}

function wordsOf(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

function fnv1a(word: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < word.length; i++) {
    hash ^= word.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** What the `openai` package decodes when it asks for `encoding_format: "base64"` (its default). */
function float32Base64(vector: number[]): string {
  const buffer = Buffer.alloc(vector.length * 4);
  vector.forEach((v, i) => buffer.writeFloatLE(v, i * 4));
  return buffer.toString("base64");
}

/** A rough, deterministic token count (about four characters a token), enough for usage fields. */
function approxTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

function messageText(message: ChatMessage): string {
  if (typeof message.content === "string") return message.content;
  if (Array.isArray(message.content)) {
    return message.content.map((part: { text?: unknown }) => (typeof part?.text === "string" ? part.text : "")).join("");
  }
  return "";
}

function splitAfterWords(text: string): string[] {
  const pieces = text.match(/\S+\s*/g) ?? [];
  const leading = /^\s+/.exec(text)?.[0];
  if (leading && pieces.length > 0) pieces[0] = leading + pieces[0];
  return pieces.length > 0 ? pieces : [text];
}

function defaultErrorBody(status: number): object {
  const type = status === 429 ? "rate_limit_exceeded" : status >= 500 ? "server_error" : "invalid_request_error";
  return { error: { message: `Fake upstream error ${status}`, type, code: null, param: null } };
}

function behaviourControl<B>(): BehaviourControl<B> & { take(): B; clear(): void } {
  const queue: B[] = [];
  let fallback: B | undefined;
  return {
    next: (behaviour) => void queue.push(behaviour),
    always: (behaviour) => void (fallback = behaviour),
    take: () => queue.shift() ?? fallback ?? ({} as B),
    clear: () => {
      queue.length = 0;
      fallback = undefined;
    },
  };
}

async function readRaw(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

function parseJson(raw: Buffer): unknown {
  const text = raw.toString("utf8");
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A multipart/form-data body, parsed by the platform's own parser. */
async function parseForm(raw: Buffer, contentType: string): Promise<RecordedForm> {
  const data = await new Response(new Uint8Array(raw), { headers: { "content-type": contentType } }).formData();
  const form: RecordedForm = { fields: {} };
  for (const [field, value] of data.entries()) {
    if (typeof value === "string") form.fields[field] = value;
    else form.file = { field, name: value.name, type: value.type, size: value.size };
  }
  return form;
}

/** Deterministic stand-in MP3 bytes: an ID3 tag, then bytes from the text. Only passed through, never decoded. */
export function fakeMp3(text: string, length = 4096): Uint8Array {
  const bytes = new Uint8Array(length);
  bytes.set([0x49, 0x44, 0x33, 0x03, 0, 0, 0, 0, 0, 0]);
  for (let i = 10; i < length; i++) bytes[i] = (text.charCodeAt(i % Math.max(1, text.length)) * 31 + i) & 0xff;
  return bytes;
}

/** A small, non-blank PNG with the proportions of an OpenAI size such as `1536x1024` (a sixteenth of it). */
export function fakePng(size: string | undefined): Buffer {
  const [w, h] = (size ?? "1024x1024").split("x").map((n) => Math.max(1, Math.round(Number(n) / 16) || 64));
  const png = new PNG({ width: w!, height: h! });
  for (let y = 0; y < h!; y++) {
    for (let x = 0; x < w!; x++) {
      const i = (y * w! + x) * 4;
      png.data[i] = (x * 255) / w!;
      png.data[i + 1] = (y * 255) / h!;
      png.data[i + 2] = 160;
      png.data[i + 3] = 255;
    }
  }
  return PNG.sync.write(png);
}

export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const embeddingDimensions = options.embeddingDimensions ?? 1536;
  const serves = new Set<FakeCapability>(options.serves ?? ["chat", "embeddings", "speech", "transcriptions", "images", "moderations"]);
  const requests: RecordedRequest[] = [];
  const chat = behaviourControl<ChatBehaviour>();
  const embeddings = behaviourControl<EmbeddingsBehaviour>();
  const speech = behaviourControl<SpeechBehaviour>();
  const transcriptions = behaviourControl<TranscriptionBehaviour>();
  const images = behaviourControl<ImagesBehaviour>();
  const moderations = behaviourControl<ModerationsBehaviour>();
  // Images answered as links, served by GET /files/<n>.png.
  const files = new Map<string, Uint8Array>();
  const sockets = new Set<Socket>();
  // Aborted requests not yet handed out by `waitForAbort`, and the callers waiting for one.
  const unclaimedAborts: RecordedRequest[] = [];
  const abortWaiters: ((request: RecordedRequest) => void)[] = [];
  let idCounter = 0;

  function recordAbort(record: RecordedRequest): void {
    record.aborted = true;
    const waiter = abortWaiters.shift();
    if (waiter) waiter(record);
    else unclaimedAborts.push(record);
  }

  /** Resolves after `ms` (at once when 0); false when the client went away meanwhile. */
  function pause(ms: number | undefined, res: ServerResponse): Promise<boolean> {
    if (res.destroyed) return Promise.resolve(false);
    if (!ms) return Promise.resolve(true);
    return new Promise((resolve) => {
      const onClose = (): void => {
        clearTimeout(timer);
        resolve(false);
      };
      const timer = setTimeout(() => {
        res.off("close", onClose);
        resolve(!res.destroyed);
      }, ms);
      res.once("close", onClose);
    });
  }

  function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(JSON.stringify(body));
  }

  function sendError(res: ServerResponse, behaviour: { status?: number; errorBody?: object; retryAfter?: string }): void {
    const status = behaviour.status ?? 500;
    sendJson(res, status, behaviour.errorBody ?? defaultErrorBody(status), behaviour.retryAfter ? { "retry-after": behaviour.retryAfter } : {});
  }

  function handleModerations(body: { model?: string; input?: unknown }, res: ServerResponse): void {
    const behaviour = moderations.take();
    if (behaviour.status) return sendError(res, behaviour);
    if (body.input === undefined) return sendJson(res, 400, { error: { message: "'input' is required", type: "invalid_request_error", code: null, param: "input" } });
    const inputs = (Array.isArray(body.input) ? body.input : [body.input]).map(String);
    sendJson(res, 200, {
      id: `modr-${++idCounter}`,
      model: body.model ?? "omni-moderation-latest",
      results: inputs.map((input) => {
        const flaggedIn = new Set([...input.matchAll(/FLAG:([a-z/-]+)/g)].map((match) => match[1]!));
        const categories = Object.fromEntries(MODERATION_CATEGORIES.map((category) => [category, flaggedIn.has(category)]));
        const scores = Object.fromEntries(MODERATION_CATEGORIES.map((category) => [category, flaggedIn.has(category) ? 0.98 : 0.001]));
        const applied = Object.fromEntries(MODERATION_CATEGORIES.map((category) => [category, ["text"]]));
        return { flagged: flaggedIn.size > 0, categories, category_scores: scores, category_applied_input_types: applied };
      }),
    });
  }

  async function handleEmbeddings(body: EmbeddingsBody, res: ServerResponse): Promise<void> {
    const behaviour = embeddings.take();
    if (!(await pause(behaviour.firstTokenDelayMs, res))) return;
    if (behaviour.status) return sendError(res, behaviour);
    if (body.input === undefined || (Array.isArray(body.input) && body.input.length === 0)) {
      return sendJson(res, 400, { error: { message: "'input' is required", type: "invalid_request_error", code: null, param: "input" } });
    }
    const inputs = Array.isArray(body.input) ? body.input : [body.input];
    const dimensions = body.dimensions ?? embeddingDimensions;
    const base64 = body.encoding_format === "base64";
    const tokens = inputs.reduce((sum, input) => sum + approxTokens(String(input)), 0);
    sendJson(res, 200, {
      object: "list",
      data: inputs.map((input, index) => {
        const vector = hashedEmbedding(String(input), dimensions);
        return { object: "embedding", index, embedding: base64 ? float32Base64(vector) : vector };
      }),
      model: body.model ?? "text-embedding-3-small",
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    });
  }

  async function handleSpeech(body: { input?: string; voice?: string }, res: ServerResponse): Promise<void> {
    const behaviour = speech.take();
    if (behaviour.status) return sendError(res, behaviour);
    const audio = behaviour.audio ?? fakeMp3(`${body.voice}:${body.input ?? ""}`);
    const count = Math.max(1, behaviour.chunks ?? 4);
    const size = Math.ceil(audio.length / count);
    res.writeHead(200, { "content-type": "audio/mpeg", "transfer-encoding": "chunked" });
    for (let i = 0; i < count; i++) {
      if (res.destroyed) return;
      res.write(audio.subarray(i * size, (i + 1) * size));
      if (i === 0 && behaviour.holdAfterFirstChunk) await behaviour.holdAfterFirstChunk;
    }
    res.end();
  }

  function handleTranscription(form: RecordedForm | undefined, res: ServerResponse): void {
    const behaviour = transcriptions.take();
    if (behaviour.status) return sendError(res, behaviour);
    if (!form?.file) return sendJson(res, 400, { error: { message: "'file' is required", type: "invalid_request_error", code: null, param: "file" } });
    const text = behaviour.text ?? "Captain Nova, which planet is the bright one low in the west tonight?";
    const segments = behaviour.segments ?? [
      { start: 0, end: 2, avg_logprob: -0.05 },
      { start: 2, end: 3, avg_logprob: -0.2 },
    ];
    const verbose = form.fields.response_format === "verbose_json";
    if (!verbose) return sendJson(res, 200, { text });
    sendJson(res, 200, {
      task: "transcribe",
      language: behaviour.language ?? "english",
      duration: segments.at(-1)?.end ?? 0,
      text,
      segments: segments.map((segment, id) => ({
        id,
        seek: 0,
        start: segment.start,
        end: segment.end,
        text: "",
        tokens: [],
        temperature: 0,
        avg_logprob: segment.avg_logprob,
        compression_ratio: 1,
        no_speech_prob: 0.01,
      })),
    });
  }

  function handleImages(body: { size?: string; response_format?: string }, res: ServerResponse, origin: string): void {
    const behaviour = images.take();
    if (behaviour.status) return sendError(res, behaviour);
    const bytes = behaviour.bytes ?? fakePng(body.size);
    const created = Math.floor(Date.now() / 1000);
    if ((behaviour.format ?? "b64_json") === "url") {
      const name = `${files.size + 1}.png`;
      files.set(name, bytes);
      return sendJson(res, 200, { created, data: [{ url: `${origin}/files/${name}`, revised_prompt: null }] });
    }
    sendJson(res, 200, { created, data: [{ b64_json: Buffer.from(bytes).toString("base64") }] });
  }

  async function handleChat(body: ChatBody, res: ServerResponse, markOwnDisconnect: () => void): Promise<void> {
    const behaviour = chat.take();
    const messages = body.messages ?? [];
    const lastUser = [...messages].reverse().find((m) => m.role === "user");
    // Like a real model: the reply ends before a stop sequence, and after max_tokens "tokens" (words here).
    let reply = behaviour.reply ?? `Echo: ${lastUser ? messageText(lastUser) : ""}`;
    const stops = typeof body.stop === "string" ? [body.stop] : (body.stop ?? []);
    for (const stop of stops) if (reply.includes(stop)) reply = reply.slice(0, reply.indexOf(stop));
    const cap = body.max_tokens ?? body.max_completion_tokens;
    const words = splitAfterWords(reply);
    const cut = behaviour.chunks === undefined && cap !== undefined && words.length > cap;
    const chunks = behaviour.chunks ?? (cut ? words.slice(0, cap) : words);
    const content = chunks.join("");
    const toolCalls = behaviour.toolCalls ?? [];
    const finishReason = behaviour.finishReason ?? (toolCalls.length > 0 ? "tool_calls" : cut ? "length" : "stop");
    const promptTokens = messages.reduce((sum, m) => sum + 4 + approxTokens(messageText(m)), 3);
    const usage = { prompt_tokens: promptTokens, completion_tokens: approxTokens(content), total_tokens: promptTokens + approxTokens(content) };
    const id = `chatcmpl-fake${++idCounter}`;
    const created = Math.floor(Date.now() / 1000);
    const model = body.model ?? "gpt-4o-mini";

    if (!(await pause(behaviour.firstTokenDelayMs, res))) return;
    if (behaviour.status) return sendError(res, behaviour);

    if (!body.stream) {
      return sendJson(res, 200, {
        id,
        object: "chat.completion",
        created,
        model,
        choices: [
          {
            index: 0,
            message: {
              role: "assistant",
              content: toolCalls.length > 0 && content === "" ? null : content,
              refusal: null,
              ...(toolCalls.length > 0
                ? { tool_calls: toolCalls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } })) }
                : {}),
            },
            logprobs: null,
            finish_reason: finishReason,
          },
        ],
        usage,
      });
    }

    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    const send = (data: unknown): void => void res.write(`data: ${JSON.stringify(data)}\n\n`);
    const chunk = (delta: object, finishReason: string | null = null): object => ({
      id,
      object: "chat.completion.chunk",
      created,
      model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    });
    send(chunk({ role: "assistant", content: "" }));
    for (const [index, piece] of chunks.entries()) {
      if (behaviour.failAfterChunks !== undefined && index === behaviour.failAfterChunks) return breakStream(behaviour, res, send, markOwnDisconnect);
      if (index > 0 && !(await pause(behaviour.chunkDelayMs, res))) return;
      send(chunk({ content: piece }));
    }
    if (behaviour.failAfterChunks !== undefined && behaviour.failAfterChunks >= chunks.length) return breakStream(behaviour, res, send, markOwnDisconnect);
    for (const [index, call] of toolCalls.entries()) {
      const half = Math.floor(call.arguments.length / 2);
      send(chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: call.arguments.slice(0, half) } }] }));
      send(chunk({ tool_calls: [{ index, function: { arguments: call.arguments.slice(half) } }] }));
    }
    send(chunk({}, finishReason));
    if (body.stream_options?.include_usage) send({ id, object: "chat.completion.chunk", created, model, choices: [], usage });
    res.end("data: [DONE]\n\n");
  }

  function breakStream(behaviour: ChatBehaviour, res: ServerResponse, send: (data: unknown) => void, markOwnDisconnect: () => void): void {
    if (behaviour.failWith === "error-event") {
      send(behaviour.errorBody ?? { error: { message: "Fake stream failure", type: "server_error", code: null } });
      res.end();
      return;
    }
    markOwnDisconnect();
    // Drop the connection without ending the chunked body, once what was written is on the wire
    // (destroying at once could discard it, and the client would see no delta at all).
    const socket = res.socket;
    socket?.write("", () => socket.destroy());
  }

  const server = createServer((req, res) => {
    const record: RecordedRequest = { method: req.method ?? "GET", path: (req.url ?? "/").split("?")[0]!, body: undefined, headers: req.headers, aborted: false };
    requests.push(record);
    let ownDisconnect = false;
    res.on("close", () => {
      if (!res.writableFinished && !ownDisconnect) recordAbort(record);
    });
    void (async () => {
      const raw = await readRaw(req);
      const contentType = req.headers["content-type"] ?? "";
      if (contentType.startsWith("multipart/form-data")) record.form = await parseForm(raw, contentType);
      else record.body = parseJson(raw);
      const post = (path: string, capability: FakeCapability) => req.method === "POST" && record.path === path && serves.has(capability);
      if (post("/v1/audio/speech", "speech")) return handleSpeech((record.body ?? {}) as { input?: string }, res);
      if (post("/v1/audio/transcriptions", "transcriptions")) return handleTranscription(record.form, res);
      if (post("/v1/images/generations", "images")) {
        return handleImages((record.body ?? {}) as { size?: string }, res, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      }
      if (req.method === "GET" && record.path.startsWith("/files/")) {
        const file = files.get(record.path.slice("/files/".length));
        if (!file) return sendJson(res, 404, { error: { message: "gone" } });
        res.writeHead(200, { "content-type": "image/png" });
        return void res.end(file);
      }
      if (post("/v1/embeddings", "embeddings")) return handleEmbeddings((record.body ?? {}) as EmbeddingsBody, res);
      if (post("/v1/moderations", "moderations")) return handleModerations((record.body ?? {}) as { model?: string; input?: unknown }, res);
      if (post("/v1/chat/completions", "chat")) {
        return handleChat((record.body ?? {}) as ChatBody, res, () => void (ownDisconnect = true));
      }
      if (req.method === "GET" && record.path === "/v1/models") {
        return sendJson(res, 200, { object: "list", data: [{ id: "gpt-4o-mini", object: "model", created: 0, owned_by: "fake" }] });
      }
      sendJson(res, 404, { error: { message: `Unknown route ${req.method} ${record.path}`, type: "invalid_request_error", code: "unknown_url" } });
    })().catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(error), type: "server_error", code: null } });
      else res.destroy();
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    chat: { next: chat.next, always: chat.always },
    embeddings: { next: embeddings.next, always: embeddings.always },
    speech: { next: speech.next, always: speech.always },
    transcriptions: { next: transcriptions.next, always: transcriptions.always },
    images: { next: images.next, always: images.always },
    moderations: { next: moderations.next, always: moderations.always },
    reset() {
      chat.clear();
      embeddings.clear();
      speech.clear();
      transcriptions.clear();
      images.clear();
      moderations.clear();
      files.clear();
      requests.length = 0;
      unclaimedAborts.length = 0;
    },
    waitForAbort(timeoutMs = 5000) {
      const earlier = unclaimedAborts.shift();
      if (earlier) return Promise.resolve(earlier);
      return new Promise((resolve, reject) => {
        const waiter = (request: RecordedRequest): void => {
          clearTimeout(timer);
          resolve(request);
        };
        const timer = setTimeout(() => {
          abortWaiters.splice(abortWaiters.indexOf(waiter), 1);
          reject(new Error(`No request was aborted within ${timeoutMs} ms`));
        }, timeoutMs);
        abortWaiters.push(waiter);
      });
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
