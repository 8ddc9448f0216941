// `npm run bench:hostile` (issue 31, principle 1): no single request, upload or imported file may
// block an API process's event loop for more than 100 ms. Persona runs in a child process on the
// embedded default (PGlite on disk, in a fresh temporary PERSONA_DATA_DIR; BENCH_IN_MEMORY=true keeps
// it in memory) with WORKER_ENABLED=true, so that the worker's jobs (document processing) run on the
// API process too. bench/lib/loop-probe.ts is preloaded into that process and measures its own event
// loop with perf_hooks.monitorEventLoopDelay (5 ms resolution), read over the IPC channel: the
// bench's own work (building inputs, uploading, polling) never shows in the figures.
//
// For each hostile input of the issue the longest stall is measured from just before the input is
// sent until it has been processed end to end (an upload until its document is `ready` or `failed`;
// a chat request until its reply has come back; a refused request until its answer), and printed
// against the 100 ms target, next to a baseline measured in the same process just before: the same
// operation with a normal small input (a small .txt, .pdf or .csv document, a small card and chat,
// the same request with a normal header), run twice, the first warming the code path up. The chat
// model is a fake OpenAI on loopback (test/fakes/openai-server.ts); embeddings are the offline ones.
// Every wait is bounded (BENCH_INPUT_TIMEOUT_MS per input, default 60 s): an input not processed in
// time is reported as a stall of at least the time the loop has not answered, and the service is
// replaced by a fresh one for the next input. Traffic goes to 127.0.0.1 only. The figures are a
// report: the exit code is 0 whatever they are, 1 only when the bench itself failed.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createDeflate } from "node:zlib";
import { PDFDocument, PDFName, StandardFonts } from "pdf-lib";
import { LIMITS } from "../server/areas/cards/mapping.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../test/fakes/openai-server.ts";
import { freePort } from "./lib/processes.ts";

const TARGET_MS = 100;
const INPUT_TIMEOUT_MS = Number(process.env.BENCH_INPUT_TIMEOUT_MS ?? 60_000);
const START_TIMEOUT_MS = 120_000;
const REQUEST_TIMEOUT_MS = 30_000;
const POLL_MS = 100;
const MB = 1024 * 1024;
const root = fileURLToPath(new URL("..", import.meta.url));
const probeModule = pathToFileURL(join(root, "bench/lib/loop-probe.ts")).href;

/** Services still running: killed, and their data removed, if the bench exits without stopping them. */
const live = new Set<{ child: ChildProcess; dataDir: string }>();
process.on("exit", () => {
  for (const { child, dataDir } of live) {
    child.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  }
});
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const withTimeout = (signal: AbortSignal, ms = REQUEST_TIMEOUT_MS) => AbortSignal.any([signal, AbortSignal.timeout(ms)]);

// ---------------------------------------------------------------------------------------------
// The service in its own process, with the probe inside it.

interface Reading {
  maxMs: number;
  p99Ms: number;
  samples: number;
}

class Service {
  readonly url: string;
  readonly #child: ChildProcess;
  readonly #dataDir: string;
  readonly #exited: Promise<string>;
  readonly #waiting = new Map<number, (reading: Reading) => void>();
  #nextId = 1;
  #log = "";
  /** When the service's loop last answered the probe: it has not turned since, at the latest. */
  lastAnswerAt = performance.now();

  private constructor(child: ChildProcess, url: string, dataDir: string) {
    this.#child = child;
    this.url = url;
    this.#dataDir = dataDir;
    const keep = (chunk: Buffer) => (this.#log = (this.#log + chunk.toString()).slice(-8000));
    child.stdout!.on("data", keep);
    child.stderr!.on("data", keep);
    child.on("message", (message: { type?: string; id?: number } & Reading) => {
      if (message?.type !== "loop-probe" || message.id === undefined) return;
      this.lastAnswerAt = performance.now();
      this.#waiting.get(message.id)?.(message);
      this.#waiting.delete(message.id);
    });
    const entry = { child, dataDir };
    live.add(entry);
    this.#exited = new Promise((done) =>
      child.once("exit", (code, signal) => {
        live.delete(entry);
        done(signal ? `signal ${signal}` : `exit code ${code}`);
      }),
    );
  }

  /** How the process ended, or undefined while it runs. */
  get ended(): string | undefined {
    const { exitCode, signalCode } = this.#child;
    return signalCode ? `signal ${signalCode}` : exitCode !== null ? `exit code ${exitCode}` : undefined;
  }

  static async start(fake: FakeOpenAI): Promise<Service> {
    const port = await freePort();
    const dataDir = mkdtempSync(join(tmpdir(), "persona-hostile-"));
    const env: Record<string, string> = {
      // Only what the service needs of the calling shell: none of its Persona or provider settings.
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? dataDir,
      TMPDIR: tmpdir(),
      PORT: String(port),
      HOST: "127.0.0.1",
      PERSONA_DATA_DIR: dataDir,
      ...(process.env.BENCH_IN_MEMORY === "true" ? { EMBEDDED_DB_IN_MEMORY: "true" } : {}),
      WORKER_ENABLED: "true",
      LOG_LEVEL: "warn",
      RATE_LIMIT_PER_MINUTE: "1000000",
      AUTH_ATTEMPTS_PER_IP: "1000000",
      AUTH_ATTEMPTS_PER_EMAIL: "1000000",
      DEFAULT_PLAN: "creator",
      LLM_PROVIDER: "openai",
      OPENAI_BASE_URL: fake.baseUrl,
      OPENAI_API_KEY: "sk-bench-hostile",
      LLM_MAX_RETRIES: "0",
      EMBEDDINGS_PROVIDER: "local",
      SPEECH_PROVIDER: "local",
      IMAGES_PROVIDER: "local",
      AUTO_AVATARS: "false",
    };
    const child = spawn(process.execPath, ["--import", probeModule, join(root, "server/main.ts")], { env, stdio: ["ignore", "pipe", "pipe", "ipc"] });
    const service = new Service(child, `http://127.0.0.1:${port}`, dataDir);
    const deadline = performance.now() + START_TIMEOUT_MS;
    while (performance.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the service exited while starting:\n${service.#log}`);
      try {
        const response = await fetch(`${service.url}/healthz`, { signal: AbortSignal.timeout(1000) });
        await response.arrayBuffer();
        if (response.ok) return service;
      } catch {
        // not listening yet
      }
      await sleep(200);
    }
    await service.stop();
    throw new Error(`the service did not answer /healthz within ${START_TIMEOUT_MS} ms:\n${service.#log}`);
  }

  /** Asks the probe; undefined when the loop does not answer within `timeoutMs` (it is blocked). */
  probe(op: "reset" | "read", timeoutMs = 5_000): Promise<Reading | undefined> {
    const id = this.#nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(id);
        resolve(undefined);
      }, timeoutMs);
      this.#waiting.set(id, (reading) => {
        clearTimeout(timer);
        resolve(reading);
      });
      if (!this.#child.connected) return;
      this.#child.send({ type: "loop-probe", id, op });
    });
  }

  output(): string {
    return this.#log;
  }

  /** SIGTERM, then SIGKILL after `graceMs` (a blocked loop cannot run its signal handler); removes its data. */
  async stop(graceMs = 10_000): Promise<string> {
    if (this.#child.exitCode === null && this.#child.signalCode === null) {
      this.#child.kill("SIGTERM");
      const timer = setTimeout(() => this.#child.kill("SIGKILL"), graceMs);
      await this.#exited;
      clearTimeout(timer);
    }
    rmSync(this.#dataDir, { recursive: true, force: true });
    return this.#exited;
  }
}

// ---------------------------------------------------------------------------------------------
// A user of the service, and the calls the inputs are made of.

interface Session {
  service: Service;
  auth: Record<string, string>;
  /** The persona knowledge documents are uploaded to. */
  personaId: string;
  /** Baselines measured on this service, by kind. */
  baselines: Map<string, Measured>;
}

async function json(service: Service, path: string, init: RequestInit & { signal: AbortSignal }): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${service.url}${path}`, { ...init, signal: withTimeout(init.signal) });
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    body = { text: text.slice(0, 200) };
  }
  return { status: response.status, body };
}

const messageOf = (body: Record<string, unknown>) => String((body.error as { message?: string } | undefined)?.message ?? JSON.stringify(body).slice(0, 160));

async function openSession(fake: FakeOpenAI): Promise<Session> {
  const starting = performance.now();
  const service = await Service.start(fake);
  console.log(`  service started in ${((performance.now() - starting) / 1000).toFixed(1)} s`);
  const signal = AbortSignal.timeout(START_TIMEOUT_MS);
  const suffix = Date.now().toString(36);
  const registered = await json(service, "/v1/auth/register", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: `hostile_${suffix}@example.com`, username: `hostile_${suffix}`, password: "Correct-horse-9" }),
    signal,
  });
  if (registered.status !== 201) throw new Error(`register: ${registered.status} ${messageOf(registered.body)}`);
  const auth = { authorization: `Bearer ${String(registered.body.access_token)}` };
  const persona = await json(service, "/v1/personas", {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ name: "Archivist", instructions: "Answer from the documents." }),
    signal,
  });
  if (persona.status !== 201) throw new Error(`persona: ${persona.status} ${messageOf(persona.body)}`);
  return { service, auth, personaId: String(persona.body.id), baselines: new Map() };
}

/** Uploads a knowledge document and waits until it is `ready` or `failed` (or the upload is refused). */
async function processDocument(session: Session, filename: string, type: string, bytes: Uint8Array, signal: AbortSignal): Promise<string> {
  const form = new FormData();
  // A copy typed over a plain ArrayBuffer, as Blob wants it.
  form.append("file", new Blob([new Uint8Array(bytes)], { type }), filename);
  const base = `/v1/knowledge/${session.personaId}/documents`;
  const uploaded = await json(session.service, base, { method: "POST", headers: session.auth, body: form, signal });
  if (uploaded.status !== 202) return `upload refused ${uploaded.status}: ${messageOf(uploaded.body)}`;
  // Tells whether a stall came with the upload's request or with its processing afterwards.
  const atUpload = await stallSoFar(session);
  const id = String(uploaded.body.id);
  for (;;) {
    signal.throwIfAborted();
    const found = await json(session.service, `${base}/${id}`, { headers: session.auth, signal });
    const status = found.body.status;
    if (status === "ready") return `ready (${String(found.body.chunk_count)} chunks; ${atUpload} at the upload's answer)`;
    if (status === "failed") return `failed (${atUpload} at the upload's answer): ${String(found.body.error)}`;
    if (found.status !== 200) return `status ${found.status}: ${messageOf(found.body)}`;
    await sleep(POLL_MS);
  }
}

/** The longest stall since the measurement began, as a note for an outcome. */
async function stallSoFar(session: Session): Promise<string> {
  const reading = await session.service.probe("read", 2_000);
  return reading ? `longest stall ${reading.maxMs.toFixed(1)} ms` : "the loop does not answer";
}

/** Deletes the persona's documents (between measurements, so plan quotas never interfere). */
async function clearDocuments(session: Session): Promise<void> {
  const signal = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
  const base = `/v1/knowledge/${session.personaId}/documents`;
  const list = await json(session.service, `${base}?limit=100`, { headers: session.auth, signal });
  for (const doc of (list.body.data as { id: string }[] | undefined) ?? []) {
    await json(session.service, `${base}/${doc.id}`, { method: "DELETE", headers: session.auth, signal });
  }
}

/** Imports `card` as a persona, then asks it through /openai/v1/chat/completions with `history`. */
async function importAndChat(session: Session, card: unknown, history: { role: string; content: string }[], signal: AbortSignal): Promise<string> {
  const form = new FormData();
  form.append("file", new Blob([JSON.stringify(card)], { type: "application/json" }), "card.json");
  const imported = await json(session.service, "/v1/personas/import", { method: "POST", headers: session.auth, body: form, signal });
  if (imported.status !== 201) return `import refused ${imported.status}: ${messageOf(imported.body)}`;
  const atImport = await stallSoFar(session);
  const reply = await json(session.service, "/openai/v1/chat/completions", {
    method: "POST",
    headers: { ...session.auth, "content-type": "application/json" },
    body: JSON.stringify({ model: imported.body.id, messages: history }),
    signal,
  });
  if (reply.status !== 200) return `chat ${reply.status}: ${messageOf(reply.body)}`;
  return `imported (${atImport} at its answer); reply ${JSON.stringify((reply.body.choices as { message: { content: string } }[])[0]!.message.content)}`;
}

/** An unauthenticated POST /v1/auth/login with the given Content-Type; answers its status. */
async function loginWithType(session: Session, contentType: string, signal: AbortSignal): Promise<string> {
  const answer = await json(session.service, "/v1/auth/login", { method: "POST", headers: { "content-type": contentType }, body: "x", signal });
  return `answered ${answer.status} ${String((answer.body.error as { code?: string } | undefined)?.code ?? "")}`.trim();
}

// ---------------------------------------------------------------------------------------------
// The inputs.

const WORDS = "harbour tide lantern keeper granary mill river orchard ledger voyage compass anchor ferry beacon cellar market weaver quarry bridge meadow".split(" ");

function prose(bytes: number): string {
  const words: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const word = WORDS[(i * 7 + (i >> 3)) % WORDS.length]!;
    words.push(i % 12 === 11 ? `${word}.` : word);
    size += word.length + 1;
  }
  return words.join(" ");
}

/** Deflates `bytes` zeros piece by piece (never the whole inflated size in memory). */
async function deflatedZeros(bytes: number): Promise<Uint8Array> {
  const deflate = createDeflate({ level: 9 });
  const parts: Buffer[] = [];
  deflate.on("data", (chunk: Buffer) => parts.push(chunk));
  const ended = new Promise((resolve, reject) => {
    deflate.on("end", resolve);
    deflate.on("error", reject);
  });
  const zeros = Buffer.alloc(MB);
  for (let written = 0; written < bytes; written += zeros.length) {
    if (!deflate.write(zeros.subarray(0, Math.min(zeros.length, bytes - written)))) await new Promise((resolve) => deflate.once("drain", resolve));
  }
  deflate.end();
  await ended;
  return Buffer.concat(parts);
}

/** A one-page PDF whose content stream is `inflated` bytes of zeros (PDF white space), FlateDecode. */
async function pdfBomb(inflated: number): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const page = pdf.addPage([200, 200]);
  page.node.set(PDFName.of("Contents"), pdf.context.register(pdf.context.stream(await deflatedZeros(inflated), { Filter: "FlateDecode" })));
  return pdf.save({ useObjectStreams: false });
}

async function smallPdf(): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  const page = pdf.addPage();
  const lines = prose(1500).match(/.{1,80}(\s|$)/g) ?? [];
  lines.forEach((line, i) => page.drawText(line.trim(), { x: 40, y: 760 - i * 14, size: 10, font }));
  return pdf.save();
}

/** How large a lorebook the card import allows today: read from server/areas/cards/mapping.ts's LIMITS. */
function lorebookShape() {
  const numbers = Object.entries(LIMITS as Record<string, unknown>).filter((pair): pair is [string, number] => typeof pair[1] === "number");
  const find = (pattern: RegExp) => numbers.find(([name]) => pattern.test(name));
  const entries = find(/^(lorebook|book)?entries$/i)?.[1] ?? 2_000;
  const perEntry = find(/keys?PerEntry|entryKeys|perEntry/i);
  const total = find(/^(total|book|lorebook)?keys(Total)?$/i);
  const keyLength = find(/^keyLength$|^keyChars$/i);
  const keyCharacters = find(/^(total)?keys?Char(acter)?s(Total)?$/i);
  const scanDepth = find(/scanDepth/i);
  // Unbounded today: the card of the issue, 20,000 keys; otherwise as many as the limits allow.
  const allowed = Math.min(total?.[1] ?? Infinity, perEntry ? entries * perEntry[1] : Infinity);
  const keys = Number.isFinite(allowed) ? allowed : 20_000;
  // Keys as long as the limits let them all be (the matcher's cost grows with their characters too).
  const unique = `qz${(keys - 1).toString(36)}`.length;
  const length = Math.max(unique, Math.min(keyLength?.[1] ?? Infinity, keyCharacters ? Math.floor(keyCharacters[1] / keys) : 8));
  const limits = [
    `entries ${entries}`,
    perEntry ? `${perEntry[0]} ${perEntry[1]}` : "no keys-per-entry limit",
    total ? `${total[0]} ${total[1]}` : "no total-keys limit",
    ...(keyLength ? [`${keyLength[0]} ${keyLength[1]}`] : []),
    ...(keyCharacters ? [`${keyCharacters[0]} ${keyCharacters[1]}`] : []),
    ...(scanDepth ? [`${scanDepth[0]} ${scanDepth[1]}`] : []),
  ];
  return { entries, keys, length, scanDepth: Math.min(100, scanDepth?.[1] ?? 100), limits };
}

/**
 * A card whose lorebook has `keys` distinct keys of `length` characters over `entries` entries
 * (none is found in the chat, so every key is looked for in all of it).
 */
function lorebookCard(name: string, entries: number, keys: number, scanDepth: number, length = 8) {
  const book = Array.from({ length: Math.min(entries, keys) }, (_, i) => ({ keys: [] as string[], content: `Lore ${i}: the keeper's ${WORDS[i % WORDS.length]}.`, insertion_order: i, enabled: true }));
  for (let k = 0; k < keys; k++) {
    book[k % book.length]!.keys.push(`qz${k.toString(36)}`.padEnd(length, "x"));
  }
  return {
    spec: "chara_card_v2",
    spec_version: "2.0",
    data: { name, description: "Keeper of the lore.", first_mes: "Welcome.", character_book: { scan_depth: scanDepth, entries: book } },
  };
}

/** `bytes` of alternating user and assistant messages, then the user's new message. */
function chatHistory(bytes: number, messageBytes = 1024) {
  const history = Array.from({ length: Math.max(1, Math.round(bytes / messageBytes)) }, (_, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content: prose(messageBytes) }));
  return [...history, { role: "user", content: "What does the keeper say?" }];
}

interface Input {
  name: string;
  what: string;
  /** The kind of baseline it is compared with (a key of BASELINES). */
  baseline: keyof typeof BASELINES;
  run: (session: Session, signal: AbortSignal) => Promise<string>;
}

const BASELINES = {
  txt: { what: "a small .txt document (2 KB of prose)", run: (s: Session, signal: AbortSignal) => processDocument(s, "notes.txt", "text/plain", Buffer.from(prose(2_000)), signal) },
  pdf: { what: "a small one-page PDF", run: async (s: Session, signal: AbortSignal) => processDocument(s, "notes.pdf", "application/pdf", await smallPdf(), signal) },
  csv: { what: "a small .csv (20 rows)", run: (s: Session, signal: AbortSignal) => processDocument(s, "crew.csv", "text/csv", Buffer.from(["name,role,ship", ...Array.from({ length: 20 }, (_, i) => `Crew ${i},${WORDS[i]},Nova`)].join("\n")), signal) },
  card: {
    what: "a small card (3 entries) and a short chat",
    run: (s: Session, signal: AbortSignal) => importAndChat(s, lorebookCard("Small Keeper", 3, 6, 4), chatHistory(2_000), signal),
  },
  request: { what: "the same request with `Content-Type: text/plain`", run: (s: Session, signal: AbortSignal) => loginWithType(s, "text/plain", signal) },
} as const;

async function inputs(): Promise<{ list: Input[]; notes: string[] }> {
  const shape = lorebookShape();
  const history = chatHistory(128 * 1024);
  const tenMb = `Start ${" ".repeat(10 * MB - "Start  end".length)} end`;
  const pdf = await pdfBomb(400 * MB);
  const header = `text/plain${"; ".repeat(Math.floor((15 * 1024 - "text/plain".length) / 2))}`;
  return {
    notes: [
      `H2 card: ${shape.keys} keys of ${shape.length} characters over ${Math.min(shape.entries, shape.keys)} entries, scan_depth ${shape.scanDepth} (LIMITS: ${shape.limits.join(", ")}); chat history ${(JSON.stringify(history).length / 1024).toFixed(0)} KB in ${history.length} messages`,
      `M7 PDF: ${(pdf.length / 1024).toFixed(0)} KB, inflating to ${400 * MB} bytes`,
    ],
    list: [
      { name: "H1", what: '.txt "Start " + 60,000 spaces + " end"', baseline: "txt", run: (s, signal) => processDocument(s, "spaces.txt", "text/plain", Buffer.from(`Start ${" ".repeat(60_000)} end`), signal) },
      { name: "H1-10MB", what: ".txt of 10 MB, one run of spaces", baseline: "txt", run: (s, signal) => processDocument(s, "ten.txt", "text/plain", Buffer.from(tenMb), signal) },
      {
        name: "H2",
        what: `card, ${shape.keys} lorebook keys, scan_depth ${shape.scanDepth}; chat with 128 KB history`,
        baseline: "card",
        run: (s, signal) => importAndChat(s, lorebookCard("Lore Keeper", shape.entries, shape.keys, shape.scanDepth, shape.length), history, signal),
      },
      { name: "M2", what: `Content-Type "text/plain; ; ; ..." of ${(header.length / 1024).toFixed(0)} KB, no credential`, baseline: "request", run: (s, signal) => loginWithType(s, header, signal) },
      { name: "M7", what: `PDF of ${(pdf.length / 1024).toFixed(0)} KB inflating to 400 MB`, baseline: "pdf", run: (s, signal) => processDocument(s, "bomb.pdf", "application/pdf", pdf, signal) },
      { name: "M8", what: '.csv of 1 MB "a,a,a,..."', baseline: "csv", run: (s, signal) => processDocument(s, "wide.csv", "text/csv", Buffer.from("a,".repeat(MB / 2)), signal) },
    ],
  };
}

// ---------------------------------------------------------------------------------------------
// Measuring.

interface Measured {
  stallMs: number;
  /** The loop did not answer in time: the stall is at least `stallMs`. */
  atLeast: boolean;
  outcome: string;
  elapsedMs: number;
}

/**
 * The service's longest event-loop stall while `run` processes its input end to end, bounded by
 * INPUT_TIMEOUT_MS. While it runs, the probe is asked every 250 ms, so that a loop blocked past the
 * bound is still reported: as at least the time since it last answered.
 */
async function measure(session: Session, run: (session: Session, signal: AbortSignal) => Promise<string>): Promise<Measured> {
  const { service } = session;
  await sleep(500); // what the last measurement left running settles
  if (!(await service.probe("reset"))) throw new Error("the service's loop did not answer before the measurement");
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`not processed within ${INPUT_TIMEOUT_MS} ms`)), INPUT_TIMEOUT_MS);
  let latest = 0;
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      const reading = await service.probe("read", 250);
      if (reading) latest = Math.max(latest, reading.maxMs);
      else if (!watching) break;
      if (reading) await sleep(250);
    }
  })();
  const started = performance.now();
  let outcome: string;
  try {
    outcome = await run(session, controller.signal);
  } catch (error) {
    outcome = controller.signal.aborted ? String((controller.signal.reason as Error).message) : `error: ${(error as Error).message}`;
  } finally {
    clearTimeout(timer);
  }
  const elapsedMs = performance.now() - started;
  watching = false;
  await watcher;
  const final = await service.probe("read", controller.signal.aborted ? 5_000 : 30_000);
  if (final && !controller.signal.aborted) return { stallMs: final.maxMs, atLeast: false, outcome, elapsedMs };
  const silentMs = performance.now() - service.lastAnswerAt;
  const state = service.ended ? `; the service process ended (${service.ended})` : final ? "" : "; the loop does not answer";
  return { stallMs: Math.max(latest, final?.maxMs ?? 0, final ? 0 : silentMs), atLeast: true, outcome: `${outcome}${state}`, elapsedMs };
}

const fixed = (ms: number) => (ms >= 10_000 ? ms.toFixed(0) : ms.toFixed(1));

async function baselineOf(session: Session, kind: keyof typeof BASELINES): Promise<Measured> {
  const known = session.baselines.get(kind);
  if (known) return known;
  await measure(session, BASELINES[kind].run); // warms the code path up
  const measured = await measure(session, BASELINES[kind].run);
  session.baselines.set(kind, measured);
  console.log(`  baseline ${kind}: ${BASELINES[kind].what}: ${fixed(measured.stallMs)} ms (${measured.outcome}, ${fixed(measured.elapsedMs)} ms)`);
  return measured;
}

async function run(): Promise<void> {
  const fake = await startFakeOpenAI();
  fake.chat.always({ reply: "The keeper lights the lantern." });
  let session: Session | undefined;
  try {
    console.log(`persona on the embedded default (${process.env.BENCH_IN_MEMORY === "true" ? "in memory" : "on disk, fresh data dir"}), WORKER_ENABLED=true; node ${process.version}; load ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`);
    console.log(`longest event-loop stall of the API process (monitorEventLoopDelay max, 5 ms resolution) while each input is processed; target ${TARGET_MS} ms; bound ${INPUT_TIMEOUT_MS} ms per input`);
    const { list, notes } = await inputs();
    for (const note of notes) console.log(`  ${note}`);
    const lines: string[] = [];
    for (const input of list) {
      if (session?.service.ended) {
        console.log(`  the service process ended (${session.service.ended}); starting a fresh one`);
        await session.service.stop();
        session = undefined;
      }
      session ??= await openSession(fake);
      const baseline = await baselineOf(session, input.baseline);
      const measured = await measure(session, input.run);
      const pass = !measured.atLeast && measured.stallMs <= TARGET_MS;
      const ratio = measured.stallMs / Math.max(baseline.stallMs, 1);
      const line = [
        input.name.padEnd(8),
        `${measured.atLeast ? ">=" : "  "}${fixed(measured.stallMs).padStart(8)} ms`,
        `target ${TARGET_MS} ms`,
        pass ? "pass" : "MISS",
        `baseline ${fixed(baseline.stallMs).padStart(6)} ms`,
        `ratio ${`${measured.atLeast ? ">=" : ""}${ratio.toFixed(1)}x`.padStart(9)}`,
        `${input.what}: ${measured.outcome} in ${fixed(measured.elapsedMs)} ms`,
      ].join("  ");
      console.log(line);
      lines.push(line);
      if (measured.atLeast) {
        // Still busy with the input (or blocked by it): a fresh service for the next one.
        console.log(`  replacing the service: ${await session.service.stop(5_000)}`);
        session = undefined;
      } else {
        await clearDocuments(session);
      }
    }
    console.log("\nsummary");
    for (const line of lines) console.log(line);
  } finally {
    if (session) await session.service.stop();
    await fake.close();
  }
}

try {
  await run();
  process.exit(0);
} catch (error) {
  console.error(`bench:hostile failed: ${(error as Error).stack ?? String(error)}`);
  process.exit(1);
}
