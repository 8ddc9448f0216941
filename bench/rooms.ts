// `npm run bench:rooms`: live room events on PostgreSQL (BENCH_DATABASE_URL) with two API processes
// on one scratch database and the offline model.
// (a) Delivery latency: one member sends through process A; the time until the message's `message`
//     event reaches each of the 100 subscribers on process B (200 subscribers in all, half on each
//     process). Baseline, measured in the same run: one NOTIFY from one pg client to another that
//     LISTENs, the floor of any cross-process delivery.
// (b) Sends per second sustained into that room (every send answered by a persona, its events fanned
//     out to the 200 subscribers), as a ratio to blocking 1:1 chat sends on the same processes.
import { randomBytes } from "node:crypto";
import { createParser } from "eventsource-parser";
import pg from "pg";
import { childGroup } from "./lib/children.ts";
import { benchServer, scratchDatabase } from "./lib/database.ts";
import { expectAll, measure, type LoadOptions, type LoadResult } from "./lib/load.ts";
import { startPersona } from "./lib/persona.ts";

const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 200);
const MEMBERS = 20;
const SENDS = Number(process.env.BENCH_ROUNDS ?? 60);
const NOTIFY_SAMPLES = 500;
const TARGET_P50_MS = 20;
const TARGET_P99_MS = 100;
const sendLoad: LoadOptions = { connections: 8, durationS: 8, warmupS: 2, pipelining: 1 };

const group = childGroup();

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const summary = (samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), n: sorted.length };
};
const ms = (value: number) => value.toFixed(2).padStart(8);
const verdict = (value: number, target: number) => (value <= target ? "met" : "MISSED");

async function json(url: string, path: string, init: RequestInit & { expect?: number } = {}): Promise<Record<string, unknown>> {
  const response = await fetch(url + path, init);
  const body = (await response.json()) as Record<string, unknown>;
  if (response.status !== (init.expect ?? 200)) throw new Error(`${init.method ?? "GET"} ${path} answered ${response.status}: ${JSON.stringify(body)}`);
  return body;
}

interface User {
  id: string;
  headers: Record<string, string>;
}

async function register(url: string, label: string): Promise<User> {
  const suffix = randomBytes(4).toString("hex");
  const body = await json(url, "/v1/auth/register", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: `${label}_${suffix}@example.com`, username: `${label}_${suffix}`, password: "Correct-horse-9" }),
    expect: 201,
  });
  return { id: (body.user as { id: string }).id, headers: { authorization: `Bearer ${body.access_token as string}`, "content-type": "application/json" } };
}

/** The bare cross-process floor: NOTIFY from one client, received by another that LISTENs. */
async function notifyRoundTrip(databaseUrl: string): Promise<number[]> {
  const listener = new pg.Client({ connectionString: databaseUrl });
  const sender = new pg.Client({ connectionString: databaseUrl });
  await Promise.all([listener.connect(), sender.connect()]);
  await listener.query("LISTEN bench_round_trip");
  const samples: number[] = [];
  let received: ((at: number) => void) | undefined;
  listener.on("notification", () => received?.(performance.now()));
  for (let i = 0; i < NOTIFY_SAMPLES + 50; i++) {
    const arrived = new Promise<number>((resolve) => (received = resolve));
    const started = performance.now();
    await sender.query(`NOTIFY bench_round_trip, '${i}'`);
    const at = await arrived;
    if (i >= 50) samples.push(at - started);
  }
  await Promise.all([listener.end(), sender.end()]);
  return samples;
}

/** One open event stream: calls `onMessage` with each `message` event's content and arrival time. */
async function subscribe(url: string, roomId: string, user: User, onMessage: (content: string, at: number) => void, signal: AbortSignal): Promise<void> {
  const response = await fetch(`${url}/v1/rooms/${roomId}/events`, { headers: user.headers, signal });
  if (response.status !== 200) throw new Error(`events answered ${response.status}: ${await response.text()}`);
  const parser = createParser({
    onEvent: (event) => {
      if (event.event === "message") onMessage((JSON.parse(event.data) as { content: string }).content, performance.now());
    },
  });
  const decoder = new TextDecoder();
  void (async () => {
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
    } catch {
      // closed at the end of the run
    }
  })();
}

const row = (label: string, r: LoadResult) =>
  `${label.padEnd(44)} ${r.requestsPerSecond.toFixed(1).padStart(7)} req/s   p50 ${String(r.p50).padStart(4)} ms   p99 ${String(r.p99).padStart(4)} ms   (${r.total} requests)`;

async function main(databaseUrl: string): Promise<number> {
  console.log(`node ${process.version} (${process.platform}/${process.arch}); PostgreSQL (BENCH_DATABASE_URL), scratch database; offline model`);
  // A migrates the database before B starts.
  const a = await startPersona({ DATABASE_URL: databaseUrl, AUTO_AVATARS: "false" });
  group.add(a.child);
  const b = await startPersona({ DATABASE_URL: databaseUrl, AUTO_AVATARS: "false", WORKER_ENABLED: "false" });
  group.add(b.child);

  process.stderr.write(`  setup: ${MEMBERS} members, one room with one persona, ${SUBSCRIBERS} subscribers...\n`);
  const members: User[] = [];
  for (let i = 0; i < MEMBERS; i++) members.push(await register(a.url, `bench_member${i}`));
  const owner = members[0]!;
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  // The creator plan's 50,000 messages a month leave room for the whole run.
  await db.query("UPDATE users SET plan = 'creator' WHERE id = ANY($1)", [members.map((member) => member.id)]);
  await db.end();
  const persona = await json(a.url, "/v1/personas", {
    method: "POST",
    headers: owner.headers,
    body: JSON.stringify({ name: "Nova", instructions: "You are a benchmark persona. Answer briefly.", greeting_message: "Hello!" }),
    expect: 201,
  });
  const room = await json(a.url, "/v1/rooms", { method: "POST", headers: owner.headers, body: JSON.stringify({ name: "Bench", persona_ids: [persona.id] }), expect: 201 });
  const roomId = room.id as string;
  for (const member of members.slice(1)) await json(a.url, `/v1/rooms/${roomId}/members`, { method: "POST", headers: owner.headers, body: JSON.stringify({ user_id: member.id }) });

  // Arrival times by message content: on the far process (B), and for comparison on A, the process sent to.
  const arrivals = new Map<string, number[]>();
  const arrivalsOnA = new Map<string, number[]>();
  const closing = new AbortController();
  for (let i = 0; i < SUBSCRIBERS; i++) {
    const onB = i % 2 === 1;
    const member = members[i % MEMBERS]!;
    const into = onB ? arrivals : arrivalsOnA;
    await subscribe(onB ? b.url : a.url, roomId, member, (content, at) => {
      let list = into.get(content);
      if (!list) into.set(content, (list = []));
      list.push(at);
    }, closing.signal);
  }
  const onBCount = SUBSCRIBERS / 2;

  process.stderr.write(`  baseline: ${NOTIFY_SAMPLES} NOTIFY round trips between two pg clients...\n`);
  const notify = summary(await notifyRoundTrip(databaseUrl));

  process.stderr.write(`  delivery: ${SENDS} sends through A, each to the ${onBCount} subscribers on B...\n`);
  const latencies: number[] = [];
  const latenciesOnA: number[] = [];
  const sendTimes: number[] = [];
  const nonce = randomBytes(3).toString("hex");
  for (let i = -5; i < SENDS; i++) {
    const content = `bench ${nonce} ${i}: which planet is low in the west?`;
    const sender = members[(i + 5) % MEMBERS]!;
    const started = performance.now();
    await json(a.url, `/v1/rooms/${roomId}/messages`, { method: "POST", headers: sender.headers, body: JSON.stringify({ content }), expect: 201 });
    if (i >= 0) sendTimes.push(performance.now() - started);
    const deadline = Date.now() + 10_000;
    while ((arrivals.get(content)?.length ?? 0) < onBCount) {
      if (Date.now() > deadline) throw new Error(`only ${arrivals.get(content)?.length ?? 0} of ${onBCount} subscribers on B got send ${i}`);
      await new Promise((wait) => setTimeout(wait, 1));
    }
    // The first five warm up both processes.
    while ((arrivalsOnA.get(content)?.length ?? 0) < SUBSCRIBERS - onBCount) {
      if (Date.now() > deadline) throw new Error(`only ${arrivalsOnA.get(content)?.length ?? 0} subscribers on A got send ${i}`);
      await new Promise((wait) => setTimeout(wait, 1));
    }
    if (i >= 0) for (const at of arrivals.get(content)!) latencies.push(at - started);
    if (i >= 0) for (const at of arrivalsOnA.get(content)!) latenciesOnA.push(at - started);
    arrivals.delete(content);
    arrivalsOnA.delete(content);
  }
  const delivery = summary(latencies);
  const sendTime = summary(sendTimes);
  const sameProcess = summary(latenciesOnA);

  process.stderr.write("  sustained sends into the room (4 connections on each process), then 1:1 chat sends...\n");
  const roomSend = { method: "POST" as const, path: `/v1/rooms/${roomId}/messages`, headers: owner.headers, body: JSON.stringify({ content: "How far is Mars tonight?" }) };
  const half = { ...sendLoad, connections: sendLoad.connections / 2 };
  const [roomOnA, roomOnB] = await Promise.all([measure(a.url, roomSend, half), measure(b.url, roomSend, half)]);
  const conversation = await json(a.url, "/v1/conversations", { method: "POST", headers: owner.headers, body: JSON.stringify({ persona_id: persona.id }), expect: 201 });
  const chatSend = { method: "POST" as const, path: `/v1/conversations/${conversation.id as string}/messages`, headers: owner.headers, body: JSON.stringify({ content: "How far is Mars tonight?" }) };
  const [chatOnA, chatOnB] = await Promise.all([measure(a.url, chatSend, half), measure(b.url, chatSend, half)]);
  closing.abort();
  const roomRate = roomOnA.requestsPerSecond + roomOnB.requestsPerSecond;
  const chatRate = chatOnA.requestsPerSecond + chatOnB.requestsPerSecond;
  const problems = [expectAll("room send on A", roomOnA, 201), expectAll("room send on B", roomOnB, 201), expectAll("chat send on A", chatOnA, 201), expectAll("chat send on B", chatOnB, 201)].filter(Boolean);

  console.log("");
  console.log(`delivery from a send through A to the subscribers on B, ${SUBSCRIBERS} subscribers over both processes, ${delivery.n} samples (ms):`);
  console.log(`  NOTIFY between two pg clients (baseline)   p50 ${ms(notify.p50)}   p99 ${ms(notify.p99)}   (${notify.n} samples)`);
  console.log(`  send -> message event on the other process p50 ${ms(delivery.p50)}   p99 ${ms(delivery.p99)}`);
  console.log(`  (the send itself, answered after the persona's reply: p50 ${sendTime.p50.toFixed(2)} ms, p99 ${sendTime.p99.toFixed(2)} ms)`);
  console.log(`  (to the ${SUBSCRIBERS - onBCount} subscribers on A, the process sent to: p50 ${sameProcess.p50.toFixed(2)} ms, p99 ${sameProcess.p99.toFixed(2)} ms)`);
  console.log("");
  console.log(row("room send, 4 connections on A", roomOnA));
  console.log(row("room send, 4 connections on B", roomOnB));
  console.log(row("1:1 chat send, 4 connections on A (baseline)", chatOnA));
  console.log(row("1:1 chat send, 4 connections on B (baseline)", chatOnB));
  console.log("");
  console.log(`bench:rooms delivery p50 = ${delivery.p50.toFixed(2)} ms (target <= ${TARGET_P50_MS} ms: ${verdict(delivery.p50, TARGET_P50_MS)}); ratio to one NOTIFY = ${(delivery.p50 / notify.p50).toFixed(1)}`);
  console.log(`bench:rooms delivery p99 = ${delivery.p99.toFixed(2)} ms (target <= ${TARGET_P99_MS} ms: ${verdict(delivery.p99, TARGET_P99_MS)}); ratio to one NOTIFY = ${(delivery.p99 / notify.p99).toFixed(1)}`);
  console.log(`bench:rooms sends/s sustained = ${roomRate.toFixed(1)} (target: report; each stores 2 messages and fans ${SUBSCRIBERS} streams); ratio to 1:1 chat sends = ${(roomRate / chatRate).toFixed(2)}`);
  for (const problem of problems) console.log(`bench:rooms: ${problem}`);
  return problems.length ? 1 : 0;
}

const database = await scratchDatabase(benchServer(), "rooms");
let code = 1;
try {
  code = await main(database.url);
} catch (error) {
  console.error(`bench:rooms failed: ${error instanceof Error ? error.message : String(error)}`);
  group.dump();
} finally {
  await group.stopAll();
  await database.drop();
}
process.exitCode = code;
