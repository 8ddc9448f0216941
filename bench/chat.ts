// `npm run bench:chat`: what the chat path costs (issue 37), in one run against an instant fake
// OpenAI-compatible upstream on loopback, for each door (the native stream and /openai/v1):
// (a) time to the first content at 1 and 50 concurrent streams, next to the upstream directly (the
// baseline: "added" is the difference), a bare relay (node:http + fetch, no database) and Portkey's
// AI Gateway (bench/gateways, `npm run bench:gateways:install`), in alternating rounds;
// (b) per streamed reply at 50 streams in a closed loop: streams/s, the relaying process's CPU,
// PostgreSQL's CPU (from /proc), and Persona's statements, round trips and transactions (counted in
// its process by bench/lib/statement-counter.ts); (c) blocking sends per second and their CPU;
// (d) GET /v1/personas/:id requests/s as a ratio to GET /healthz; (e) issue 21: resume latency to
// the first missed event across processes, and stop-to-upstream-abort time (BENCH_CHAT_PART=control
// runs only these). Persona runs in its own child process on the embedded in-memory database, or
// with BENCH_DATABASE_URL (a PostgreSQL server with pgvector) on a fresh database there. Each
// figure with a target prints it, met or missed.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { startFakeOpenAI, type FakeOpenAI } from "../test/fakes/openai-server.ts";
import { chatControlFigures } from "./lib/chat-control.ts";
import { childGroup } from "./lib/children.ts";
import { scratchDatabase } from "./lib/database.ts";
import { cpuMsOf, expectAll, measure, type LoadOptions, type LoadResult } from "./lib/load.ts";
import { startPersona } from "./lib/persona.ts";
import { freePort, startNode, type Child } from "./lib/processes.ts";
import { countsBetween, postgresCpuMs, statementProbe, type StatementCounts } from "./lib/statements.ts";

const STREAMS = 50;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 12);
const readLoad: LoadOptions = { connections: 50, durationS: 8, warmupS: 2, pipelining: 1 };
const sendLoad: LoadOptions = { connections: 10, durationS: 8, warmupS: 2, pipelining: 1 };

const group = childGroup();

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const summary = (samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), n: sorted.length };
};

/** Milliseconds from sending `init` to `url` until the body first contains `marker`; the rest is read to the end. */
async function timeToMarker(url: string, init: RequestInit, marker: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(url, init);
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}: ${await response.text()}`);
  const decoder = new TextDecoder();
  let seen = "";
  let at: number | undefined;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    if (at === undefined) {
      seen += decoder.decode(chunk, { stream: true });
      if (seen.includes(marker)) at = performance.now() - started;
    }
  }
  if (at === undefined) throw new Error(`${url}: no ${marker} in ${seen.slice(0, 300)}`);
  return at;
}

async function json(url: string, path: string, init: RequestInit = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url + path, init);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const row = (label: string, r: LoadResult) =>
  `${label.padEnd(40)} ${r.requestsPerSecond.toFixed(0).padStart(7)} req/s   p50 ${String(r.p50).padStart(4)} ms   p99 ${String(r.p99).padStart(4)} ms   (${r.total} requests)`;

/** A fresh database on BENCH_DATABASE_URL's server, dropped at the end; undefined for the embedded default. */
async function benchDatabase(): Promise<{ url: string; drop: () => Promise<void> } | undefined> {
  const server = process.env.BENCH_DATABASE_URL;
  return server ? scratchDatabase(server, "chat") : undefined;
}

/** Who relays a streamed completion in the comparison, and the marker of its first content. */
interface Relayer {
  name: string;
  /** The process whose CPU is counted, if it is not this one. */
  pid?: number;
  run: (i: number) => Promise<number>;
}

const DOORS = ["native stream", "/openai/v1"] as const;

/** Everything for one database kind: the doors beside the direct upstream, the bare relay and Portkey. */
async function main(fake: FakeOpenAI, database: { url: string } | undefined): Promise<number> {
  const kind = database ? "PostgreSQL" : "embedded";
  console.log(`node ${process.version} (${process.platform}/${process.arch}); upstream: fake OpenAI-compatible server, instant; ${ROUNDS} rounds, alternating`);
  console.log(`database: ${database ? "PostgreSQL (BENCH_DATABASE_URL)" : "embedded PGlite, in memory"}`);
  const probe = statementProbe();
  const persona = await startPersona(
    { ...(database ? { DATABASE_URL: database.url } : {}), LLM_PROVIDER: "openai", EMBEDDINGS_PROVIDER: "local", OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "bench", ...probe.env },
    probe.nodeArgs,
  );
  group.add(persona.child);
  const url = persona.url;
  const personaPid = persona.child.child.pid!;
  const suffix = randomBytes(4).toString("hex");
  const registered = await json(url, "/v1/auth/register", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: `bench_${suffix}@example.com`, username: `bench_${suffix}`, password: "Correct-horse-9" }),
  });
  if (registered.status !== 201) throw new Error(`register answered ${registered.status}`);
  const auth = { authorization: `Bearer ${registered.body.access_token as string}`, "content-type": "application/json" };
  // The creator plan's 50,000 messages a month leave room for the whole run.
  const db = new pg.Client({ connectionString: persona.databaseUrl });
  await db.connect();
  await db.query("UPDATE users SET plan = 'creator' WHERE id = $1", [(registered.body.user as { id: string }).id]);
  await db.end();

  const created = await json(url, "/v1/personas", {
    method: "POST",
    headers: auth,
    body: JSON.stringify({ name: "Bench", instructions: "You are a benchmark persona. Answer briefly.", greeting_message: "Hello!" }),
  });
  if (created.status !== 201) throw new Error(`persona create answered ${created.status}: ${JSON.stringify(created.body)}`);
  const personaId = created.body.id as string;
  const conversations: string[] = [];
  for (let i = 0; i < STREAMS; i++) {
    const conversation = await json(url, "/v1/conversations", { method: "POST", headers: auth, body: JSON.stringify({ persona_id: personaId, title: `c${i}` }) });
    conversations.push(conversation.body.id as string);
  }

  if (process.env.BENCH_CHAT_PART === "control") {
    for (const line of await controlFigures(fake, database, url, auth, conversations)) console.log(line);
    return 0;
  }

  const upstreamBody = JSON.stringify({ model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content: "Say hello" }] });
  const relayPort = await freePort();
  const relay = group.add(await startNode("bare relay", [new URL("./lib/bare-relay.ts", import.meta.url).pathname], { PORT: String(relayPort), UPSTREAM_URL: fake.baseUrl }, `http://127.0.0.1:${relayPort}`, "/healthz"));
  const portkey = await startPortkeyIfInstalled(fake.baseUrl);
  const compatibleBody = JSON.stringify({ model: personaId, stream: true, messages: [{ role: "user", content: "Say hello" }] });
  const relayers: Relayer[] = [
    { name: "upstream directly", run: () => timeToMarker(`${fake.baseUrl}/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer bench" }, body: upstreamBody }, '"content"') },
    { name: "bare relay", pid: relay.child.pid!, run: () => timeToMarker(`${relay.url}/`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ content: "Say hello" }) }, '"content"') },
    ...(portkey ? [{ name: "Portkey gateway", pid: portkey.child.child.pid!, run: () => timeToMarker(portkey.request.url, portkey.request.init, '"content"') }] : []),
    { name: DOORS[0], pid: personaPid, run: (i: number) => timeToMarker(`${url}/v1/conversations/${conversations[i]}/messages/stream`, { method: "POST", headers: auth, body: JSON.stringify({ content: "Say hello" }) }, "event: delta") },
    { name: DOORS[1], pid: personaPid, run: () => timeToMarker(`${url}/openai/v1/chat/completions`, { method: "POST", headers: auth, body: compatibleBody }, '"delta":{"content":') },
  ];
  if (!portkey) console.log("Portkey gateway: not installed (npm run bench:gateways:install); left out of this run");

  // (a) Time to the first content, 1 and 50 streams at once, the relayers alternating round by round.
  const latency: Record<number, Record<string, ReturnType<typeof summary>>> = {};
  for (const streams of [1, STREAMS]) {
    process.stderr.write(`  first content, ${streams} concurrent stream(s), ${relayers.map((r) => r.name).join(", ")} in turn...\n`);
    latency[streams] = await alternatingSamples(streams, relayers);
  }
  // (b) Cost per stream, 50 streams in a closed loop: CPU of the relaying process and of
  // PostgreSQL, statements, and streams per second.
  const cost: Record<string, StreamCost> = {};
  for (const relayer of relayers.slice(1)) {
    process.stderr.write(`  cost per stream, ${STREAMS} streams in a closed loop: ${relayer.name}...\n`);
    cost[relayer.name] = await streamCost(relayer, relayer.pid === personaPid ? () => probe.read(personaPid) : undefined, Boolean(database));
  }
  await relay.stop();
  await portkey?.child.stop();

  process.stderr.write("  blocking sends...\n");
  const send = await measure(url, { method: "POST", path: `/v1/conversations/${conversations[0]}/messages`, headers: auth, body: JSON.stringify({ content: "Hello there" }) }, sendLoad, personaPid);
  process.stderr.write("  GET /healthz and GET /v1/personas/:id...\n");
  const healthz = await measure(url, { method: "GET", path: "/healthz" }, readLoad);
  const getPersona = await measure(url, { method: "GET", path: `/v1/personas/${personaId}`, headers: { authorization: auth.authorization } }, readLoad);
  const problems = [expectAll("blocking send", send, 201), expectAll("healthz", healthz, 200), expectAll("get persona", getPersona, 200)].filter(Boolean);

  const base = latency[1]![relayers[0]!.name]!;
  const base50 = latency[STREAMS]![relayers[0]!.name]!;
  console.log("");
  console.log(`time to the first content (ms), added = p50 through it - p50 of the upstream directly; ${kind}:`);
  console.log(`  ${"who".padEnd(20)} ${"1 stream p50".padStart(13)} ${"added".padStart(7)} ${`${STREAMS} streams p50`.padStart(15)} ${"added".padStart(7)} ${"p99".padStart(7)}`);
  for (const relayer of relayers) {
    const one = latency[1]![relayer.name]!;
    const many = latency[STREAMS]![relayer.name]!;
    console.log(`  ${relayer.name.padEnd(20)} ${one.p50.toFixed(1).padStart(13)} ${(one.p50 - base.p50).toFixed(1).padStart(7)} ${many.p50.toFixed(1).padStart(15)} ${(many.p50 - base50.p50).toFixed(1).padStart(7)} ${many.p99.toFixed(1).padStart(7)}`);
  }
  console.log("");
  console.log(`cost per streamed reply, ${STREAMS} streams in a closed loop for ${COST_SECONDS} s; ${kind}:`);
  console.log(`  ${"who".padEnd(20)} ${"streams/s".padStart(10)} ${"CPU ms".padStart(8)} ${"PG CPU ms".padStart(10)} ${"statements".padStart(11)} ${"round trips".padStart(12)} ${"transactions".padStart(13)}  by kind`);
  for (const [name, c] of Object.entries(cost)) {
    const s = c.statements;
    console.log(`  ${name.padEnd(20)} ${c.perSecond.toFixed(0).padStart(10)} ${c.cpuMs.toFixed(2).padStart(8)} ${(c.postgresCpuMs === undefined ? "-" : c.postgresCpuMs.toFixed(2)).padStart(10)} ${(s ? s.statements.toFixed(1) : "-").padStart(11)} ${(s ? s.roundTrips.toFixed(1) : "-").padStart(12)} ${(s ? s.transactions.toFixed(1) : "-").padStart(13)}  ${s ? Object.entries(s.byKind).filter(([, n]) => n >= 0.05).map(([k, n]) => `${k} ${n.toFixed(1)}`).join(", ") : ""}`);
  }
  for (const [name, c] of Object.entries(cost)) {
    // BENCH_STATEMENTS_TEXT=1: which statements they are, per stream.
    const texts = Object.entries(c.statements?.byText ?? {}).filter(([, n]) => n >= 0.05).sort((x, y) => y[1] - x[1]);
    if (texts.length) console.log(`  ${name}, statements per stream:\n${texts.map(([text, n]) => `    ${n.toFixed(2)}  ${text}`).join("\n")}`);
  }
  console.log("");
  console.log(row(`blocking send, ${sendLoad.connections} connections`, send) + `   CPU ${send.cpuMsPerRequest?.toFixed(2)} ms per send`);
  console.log(row("GET /healthz", healthz));
  console.log(row("GET /v1/personas/:id", getPersona));
  console.log("");
  const verdict = (met: boolean) => (met ? "met" : "MISSED");
  const added = (name: string, streams: number) => latency[streams]![name]!.p50 - latency[streams]![relayers[0]!.name]!.p50;
  const lines: string[] = [];
  for (const door of DOORS) {
    lines.push(`bench:chat ${kind} ${door}: added first-chunk p50, 1 stream = ${added(door, 1).toFixed(1)} ms (target <= 2: ${verdict(added(door, 1) <= 2)})`);
    const limit = 2 * added("bare relay", STREAMS);
    const portkeyAdded = portkey ? added("Portkey gateway", STREAMS) : undefined;
    lines.push(
      `bench:chat ${kind} ${door}: added first-chunk p50, ${STREAMS} streams = ${added(door, STREAMS).toFixed(1)} ms; bare relay ${added("bare relay", STREAMS).toFixed(1)} (target <= 2x = ${limit.toFixed(1)}: ${verdict(added(door, STREAMS) <= limit)})` +
        (portkeyAdded === undefined ? "" : `; Portkey ${portkeyAdded.toFixed(1)} (target below it: ${verdict(added(door, STREAMS) < portkeyAdded)})`),
    );
    const c = cost[door]!;
    const cpuTarget = door === DOORS[0] ? 1.5 : 1;
    lines.push(`bench:chat ${kind} ${door}: server CPU per stream = ${c.cpuMs.toFixed(2)} ms (target <= ${cpuTarget}: ${verdict(c.cpuMs <= cpuTarget)})`);
    if (door === DOORS[0]) {
      if (c.postgresCpuMs !== undefined) lines.push(`bench:chat ${kind} ${door}: PostgreSQL CPU per stream = ${c.postgresCpuMs.toFixed(2)} ms (target <= 1.5: ${verdict(c.postgresCpuMs <= 1.5)})`);
      const s = c.statements!;
      lines.push(`bench:chat ${kind} ${door}: round trips per stream = ${s.roundTrips.toFixed(1)} (target <= 3: ${verdict(s.roundTrips <= 3.05)}); transactions = ${s.transactions.toFixed(1)} (target <= 3: ${verdict(s.transactions <= 3.05)})`);
    }
    lines.push(`bench:chat ${kind} ${door}: streams/s at ${STREAMS} = ${c.perSecond.toFixed(0)}${RECORDED[kind] ? ` (recorded before: ${RECORDED[kind]![door]}; target >= 4x = ${4 * RECORDED[kind]![door]}: ${verdict(c.perSecond >= 4 * RECORDED[kind]![door])})` : ""}`);
  }
  lines.push(`bench:chat ${kind} blocking messages/s = ${send.requestsPerSecond.toFixed(0)}${RECORDED[kind] ? ` (recorded before: ${RECORDED[kind]!.blocking}; target >= 3x = ${3 * RECORDED[kind]!.blocking}: ${verdict(send.requestsPerSecond >= 3 * RECORDED[kind]!.blocking)})` : ""}`);
  lines.push(`bench:chat ${kind} get-persona/healthz = ${(getPersona.requestsPerSecond / healthz.requestsPerSecond).toFixed(2)}`);
  for (const line of lines) console.log(line);
  process.stderr.write("  resume and stop (issue 21)...\n");
  for (const line of await controlFigures(fake, database, url, auth, conversations)) console.log(line);
  for (const problem of problems) console.log(`bench:chat: ${problem}`);
  return problems.length ? 1 : 0;
}

/**
 * Streams per second before the chat path's rework (issue 37), as this bench measured them on this
 * machine (PostgreSQL 15, 2 cores): the figures the throughput targets are ratios of.
 */
const RECORDED: Partial<Record<string, Record<(typeof DOORS)[number] | "blocking", number>>> = {
  PostgreSQL: { "native stream": 158, "/openai/v1": 231, blocking: 82 },
};

/** `ROUNDS` rounds; in each, every relayer in turn runs `streams` streams at once; a warm-up round first. */
async function alternatingSamples(streams: number, relayers: Relayer[]): Promise<Record<string, ReturnType<typeof summary>>> {
  const samples = new Map<string, number[]>(relayers.map((r) => [r.name, []]));
  const rounds = streams === 1 ? ROUNDS * 10 : ROUNDS;
  for (let round = -1; round < rounds; round++) {
    for (const relayer of relayers) {
      const times = await Promise.all(Array.from({ length: streams }, (_, i) => relayer.run(i)));
      if (round >= 0) samples.get(relayer.name)!.push(...times);
    }
  }
  return Object.fromEntries([...samples].map(([name, times]) => [name, summary(times)]));
}

interface StreamCost {
  perSecond: number;
  cpuMs: number;
  postgresCpuMs?: number;
  statements?: StatementCounts;
}

const COST_SECONDS = Number(process.env.BENCH_SECONDS ?? 8);

/**
 * `STREAMS` clients each streaming one reply after another for COST_SECONDS (after a warm-up of
 * 2 s): streams per second, and per stream the relaying process's CPU, PostgreSQL's and, for
 * Persona, its statements less what it sends when idle (graphile-worker's and the outbox's polling,
 * measured over a second before).
 */
async function streamCost(relayer: Relayer, statements: (() => Promise<StatementCounts>) | undefined, postgres: boolean): Promise<StreamCost> {
  const loop = async (seconds: number) => {
    const until = performance.now() + seconds * 1000;
    let done = 0;
    await Promise.all(
      Array.from({ length: STREAMS }, async (_, i) => {
        while (performance.now() < until) {
          await relayer.run(i);
          done++;
        }
      }),
    );
    return done;
  };
  await loop(2);
  const idleFrom = statements ? await statements() : undefined;
  const idleStarted = performance.now();
  await new Promise((wait) => setTimeout(wait, 1000));
  const idle = statements ? countsBetween(idleFrom!, await statements()) : undefined;
  const idleMs = performance.now() - idleStarted;
  const before = { at: performance.now(), cpu: cpuMsOf(relayer.pid!), pg: postgres ? postgresCpuMs() : 0, counts: statements ? await statements() : undefined };
  const streams = await loop(COST_SECONDS);
  const elapsed = performance.now() - before.at;
  const cpu = cpuMsOf(relayer.pid!) - before.cpu;
  const pgCpu = postgres ? postgresCpuMs() - before.pg : 0;
  let perStream: StatementCounts | undefined;
  if (statements) {
    const during = countsBetween(before.counts!, await statements());
    const scale = (n: number, idleN: number) => (n - (idleN * elapsed) / idleMs) / streams;
    perStream = {
      roundTrips: scale(during.roundTrips, idle!.roundTrips),
      statements: scale(during.statements, idle!.statements),
      transactions: scale(during.transactions, idle!.transactions),
      byKind: Object.fromEntries(Object.entries(during.byKind).map(([k, n]) => [k, scale(n, idle!.byKind[k] ?? 0)])),
      ...(during.byText ? { byText: Object.fromEntries(Object.entries(during.byText).map(([k, n]) => [k, scale(n, idle!.byText?.[k] ?? 0)])) } : {}),
    };
  }
  return { perSecond: (streams * 1000) / elapsed, cpuMs: cpu / streams, ...(postgres ? { postgresCpuMs: pgCpu / streams } : {}), ...(perStream ? { statements: perStream } : {}) };
}

/** Portkey's gateway relaying to the fake upstream, when bench/gateways is installed. */
async function startPortkeyIfInstalled(upstream: string): Promise<{ child: Child; request: { url: string; init: RequestInit } } | undefined> {
  try {
    const { startPortkey, portkeyStreamRequest } = await import("./lib/portkey.ts");
    const child = group.add(await startPortkey(upstream));
    return { child, request: portkeyStreamRequest(child.url, upstream, JSON.stringify({ model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content: "Say hello" }] })) };
  } catch (error) {
    console.log(`Portkey gateway: ${(error as Error).message}`);
    return undefined;
  }
}

/**
 * Issue 21: resume and stop across two API processes on PostgreSQL (a second Persona on the same
 * database); on the embedded default one process owns the data, so "other" is the same process.
 */
async function controlFigures(fake: FakeOpenAI, database: { url: string } | undefined, url: string, auth: Record<string, string>, conversations: string[]): Promise<string[]> {
  let other = url;
  if (database) {
    const second = await startPersona({ DATABASE_URL: database.url, LLM_PROVIDER: "openai", EMBEDDINGS_PROVIDER: "local", OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "bench" });
    group.add(second.child);
    other = second.url;
  }
  const lines = await chatControlFigures({ fake, generating: url, other, auth, conversations });
  return [`(resume and stop: ${database ? "two API processes on PostgreSQL" : "one process on the embedded database"})`, ...lines];
}

const fake = await startFakeOpenAI();
const database = await benchDatabase();
let code = 1;
try {
  code = await main(fake, database);
} catch (error) {
  console.error(`bench:chat failed: ${error instanceof Error ? error.message : String(error)}`);
  group.dump();
} finally {
  await group.stopAll();
  await fake.close();
  await database?.drop();
}
process.exitCode = code;
