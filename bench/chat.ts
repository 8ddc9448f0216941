// `npm run bench:chat`: what the chat path costs, in one run against an instant fake OpenAI-compatible
// upstream on loopback. (a) Time to the first `delta` at 50 concurrent streams, through Persona and
// straight from the upstream (the baseline), so the difference is what the service adds, and through a
// bare relay in its own process for context (what a process hop alone adds here); (b) blocking
// sends per second; (c) GET /v1/personas/:id requests/s as a ratio to GET /healthz. Persona runs in
// its own child process on the embedded in-memory database; the fake runs in this process, where the
// baseline and the measured streams share the same client overhead. With BENCH_DATABASE_URL (a
// PostgreSQL server with pgvector) Persona runs on a fresh database there instead. (d) Issue 21:
// resume latency to the first missed event across processes, and stop-to-upstream-abort time
// (BENCH_CHAT_PART=control runs only these).
import { randomBytes } from "node:crypto";
import pg from "pg";
import { startFakeOpenAI, type FakeOpenAI } from "../test/fakes/openai-server.ts";
import { chatControlFigures } from "./lib/chat-control.ts";
import { childGroup } from "./lib/children.ts";
import { scratchDatabase } from "./lib/database.ts";
import { expectAll, measure, type LoadOptions, type LoadResult } from "./lib/load.ts";
import { startPersona } from "./lib/persona.ts";
import { freePort, startNode } from "./lib/processes.ts";

const STREAMS = 50;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 12);
// Issue 12: first delta added by Persona, on PostgreSQL.
const TARGETS = { singleP50: 3, singleP99: 10, concurrentP50: 15 };
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

/** `ROUNDS` rounds of `streams` concurrent streams; a warm-up round first. */
async function concurrentSamples(streams: number, run: (i: number) => Promise<number>): Promise<number[]> {
  await Promise.all(Array.from({ length: streams }, (_, i) => run(i)));
  const samples: number[] = [];
  const rounds = streams === 1 ? ROUNDS * 10 : ROUNDS;
  for (let round = 0; round < rounds; round++) samples.push(...(await Promise.all(Array.from({ length: streams }, (_, i) => run(i)))));
  return samples;
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

async function main(fake: FakeOpenAI, database: { url: string } | undefined): Promise<number> {
  console.log(`node ${process.version} (${process.platform}/${process.arch}); upstream: fake OpenAI-compatible server, instant`);
  console.log(`database: ${database ? "PostgreSQL (BENCH_DATABASE_URL)" : "embedded PGlite, in memory"}`);
  const persona = await startPersona({
    ...(database ? { DATABASE_URL: database.url } : {}),
    LLM_PROVIDER: "openai",
    EMBEDDINGS_PROVIDER: "local",
    OPENAI_BASE_URL: fake.baseUrl,
    OPENAI_API_KEY: "bench",
  });
  group.add(persona.child);
  const url = persona.url;
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
  const direct = () =>
    timeToMarker(`${fake.baseUrl}/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer bench" }, body: upstreamBody }, '"content"');
  const served = (i: number) =>
    timeToMarker(`${url}/v1/conversations/${conversations[i]}/messages/stream`, { method: "POST", headers: auth, body: JSON.stringify({ content: "Say hello" }) }, "event: delta");
  // Context, not a target: a bare relay (node:http + fetch, no database) in its own process shows
  // what any service relaying the stream adds on this machine.
  const relayPort = await freePort();
  const relay = group.add(await startNode("bare relay", [new URL("./lib/bare-relay.ts", import.meta.url).pathname], { PORT: String(relayPort), UPSTREAM_URL: fake.baseUrl }, `http://127.0.0.1:${relayPort}`, "/healthz"));
  const relayed = () => timeToMarker(`${relay.url}/`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ content: "Say hello" }) }, '"content"');
  const firstDelta: Record<number, { base: ReturnType<typeof summary>; through: ReturnType<typeof summary>; relay: ReturnType<typeof summary> }> = {};
  // One stream at a time shows what a request costs; 50 at once adds the queueing behind the others.
  for (const streams of [1, STREAMS]) {
    process.stderr.write(`  first delta, ${streams} concurrent stream(s): upstream directly, through a bare relay, then through Persona...\n`);
    const base = summary(await concurrentSamples(streams, direct));
    const bare = summary(await concurrentSamples(streams, relayed));
    firstDelta[streams] = { base, relay: bare, through: summary(await concurrentSamples(streams, served)) };
  }
  await relay.stop();
  await openaiFirstChunk(url, auth, personaId, conversations);
  const { base, through } = firstDelta[STREAMS]!;
  const added = { p50: through.p50 - base.p50, p99: through.p99 - base.p99 };
  const single = firstDelta[1]!;

  process.stderr.write("  blocking sends...\n");
  const send = await measure(url, { method: "POST", path: `/v1/conversations/${conversations[0]}/messages`, headers: auth, body: JSON.stringify({ content: "Hello there" }) }, sendLoad);
  process.stderr.write("  GET /healthz and GET /v1/personas/:id...\n");
  const healthz = await measure(url, { method: "GET", path: "/healthz" }, readLoad);
  const getPersona = await measure(url, { method: "GET", path: `/v1/personas/${personaId}`, headers: { authorization: auth.authorization } }, readLoad);
  const problems = [expectAll("blocking send", send, 201), expectAll("healthz", healthz, 200), expectAll("get persona", getPersona, 200)].filter(Boolean);

  console.log("");
  console.log(`time to first delta, ${STREAMS} concurrent streams, ${base.n} samples each (ms):`);
  console.log(`  upstream directly (baseline)   p50 ${base.p50.toFixed(1).padStart(7)}   p99 ${base.p99.toFixed(1).padStart(7)}`);
  console.log(`  through Persona                p50 ${through.p50.toFixed(1).padStart(7)}   p99 ${through.p99.toFixed(1).padStart(7)}`);
  console.log(`  added by Persona               p50 ${added.p50.toFixed(1).padStart(7)}   p99 ${added.p99.toFixed(1).padStart(7)}`);
  console.log(`  added by a bare relay          p50 ${(firstDelta[STREAMS]!.relay.p50 - base.p50).toFixed(1).padStart(7)}   p99 ${(firstDelta[STREAMS]!.relay.p99 - base.p99).toFixed(1).padStart(7)}   (node:http + fetch, no database: context)`);
  console.log(`one stream at a time, ${single.base.n} samples: upstream p50 ${single.base.p50.toFixed(1)}, through Persona p50 ${single.through.p50.toFixed(1)}, added p50 ${(single.through.p50 - single.base.p50).toFixed(1)} p99 ${(single.through.p99 - single.base.p99).toFixed(1)}; a bare relay adds p50 ${(single.relay.p50 - single.base.p50).toFixed(1)} p99 ${(single.relay.p99 - single.base.p99).toFixed(1)}`);
  console.log("");
  console.log(row(`blocking send, ${sendLoad.connections} connections`, send));
  console.log(row("GET /healthz", healthz));
  console.log(row("GET /v1/personas/:id", getPersona));
  console.log("");
  const verdict = (value: number, target: number) => `(target <= ${target} ms: ${value <= target ? "met" : "MISSED"})`;
  const singleAdded = { p50: single.through.p50 - single.base.p50, p99: single.through.p99 - single.base.p99 };
  console.log(`bench:chat first-delta added, one stream, p50 = ${singleAdded.p50.toFixed(1)} ms ${verdict(singleAdded.p50, TARGETS.singleP50)}`);
  console.log(`bench:chat first-delta added, one stream, p99 = ${singleAdded.p99.toFixed(1)} ms ${verdict(singleAdded.p99, TARGETS.singleP99)}`);
  console.log(`bench:chat first-delta added, ${STREAMS} streams, p50 = ${added.p50.toFixed(1)} ms ${verdict(added.p50, TARGETS.concurrentP50)}; p99 = ${added.p99.toFixed(1)} ms`);
  console.log(`(the targets are for PostgreSQL; this run: ${database ? "PostgreSQL" : "embedded"})`);
  console.log(`bench:chat first-delta through/direct p50 = ${(through.p50 / base.p50).toFixed(2)}`);
  console.log(`bench:chat blocking messages/s = ${send.requestsPerSecond.toFixed(0)} (each stores 2 messages)`);
  console.log(`bench:chat get-persona/healthz = ${(getPersona.requestsPerSecond / healthz.requestsPerSecond).toFixed(2)}`);
  process.stderr.write("  resume and stop (issue 21)...\n");
  for (const line of await controlFigures(fake, database, url, auth, conversations)) console.log(line);
  for (const problem of problems) console.log(`bench:chat: ${problem}`);
  return problems.length ? 1 : 0;
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

/**
 * Issue 22: time to the first content chunk through the OpenAI-compatible endpoint (stateless, the
 * client's history), next to the native stream's first delta, one stream and `STREAMS` at once, in
 * this run. The endpoint's role chunk goes out before the model answers, so the marker is the first
 * chunk that carries text.
 */
async function openaiFirstChunk(url: string, auth: Record<string, string>, personaId: string, conversations: string[]): Promise<void> {
  const native = (i: number) =>
    timeToMarker(`${url}/v1/conversations/${conversations[i]}/messages/stream`, { method: "POST", headers: auth, body: JSON.stringify({ content: "Say hello" }) }, "event: delta");
  const body = JSON.stringify({ model: personaId, stream: true, messages: [{ role: "user", content: "Say hello" }] });
  const compatible = () => timeToMarker(`${url}/openai/v1/chat/completions`, { method: "POST", headers: auth, body }, '"delta":{"content":');
  const lines: string[] = [];
  for (const streams of [1, STREAMS]) {
    process.stderr.write(`  first chunk, ${streams} concurrent stream(s): native stream, then /openai/v1/chat/completions...\n`);
    const base = summary(await concurrentSamples(streams, native));
    const through = summary(await concurrentSamples(streams, compatible));
    lines.push(
      `  ${String(streams).padStart(2)} stream(s), ${base.n} samples: native p50 ${base.p50.toFixed(1)} p99 ${base.p99.toFixed(1)}; OpenAI-compatible p50 ${through.p50.toFixed(1)} p99 ${through.p99.toFixed(1)}; ratio p50 ${(through.p50 / base.p50).toFixed(2)}`,
    );
  }
  console.log("time to the first content chunk, OpenAI-compatible endpoint vs the native stream (ms):");
  for (const line of lines) console.log(line);
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
