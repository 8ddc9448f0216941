// `npm run bench:overload`: load past capacity (issue 23 item 3). An authenticated mixed workload
// (reads, blocking sends and streams with the offline model) is offered open-loop at stepped rates
// to find the sustainable rate (every answer 2xx, p99 within 5x the unloaded p99, throughput kept
// up), then offered at twice that for BENCH_SECONDS (default 60). Pass rule: every answer is 2xx or
// 429 with Retry-After, never 5xx or a reset; the p99 of admitted requests stays within 5x the
// unloaded p99; the server's RSS stays within 2x its level before the overload. Persona runs in a
// child process on the embedded in-memory database, or on a scratch database of BENCH_DATABASE_URL's
// PostgreSQL, with event-loop load shedding on (LOAD_SHED_DELAY_MS, BENCH_SHED_MS here, default
// 300) and admission control bounded to the database's concurrency (ADMISSION_MAX_IN_FLIGHT 2 on
// the embedded database, 4 on PostgreSQL; ADMISSION_QUEUE_MS 200), unless
// BENCH_ADMISSION_IN_FLIGHT, BENCH_ADMISSION_QUEUE or BENCH_ADMISSION_QUEUE_MS say otherwise
// (BENCH_ADMISSION_IN_FLIGHT=64 BENCH_ADMISSION_QUEUE_MS=5000 measures the service's defaults).
// Rates start at BENCH_START_RATE (default 5/s) and grow 1.5x a step. Exit code 1 when the rule is broken.
import { readFileSync } from "node:fs";
import { childGroup } from "./lib/children.ts";
import { scratchDatabase } from "./lib/database.ts";
import { startPersona } from "./lib/persona.ts";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const STEP_SECONDS = Number(process.env.BENCH_STEP_SECONDS ?? 5);
const USERS = 20;
const group = childGroup();

interface Sample {
  kind: Kind;
  status: number;
  ms: number;
  retryAfter: boolean;
  reset: boolean;
}

const percentile = (values: number[], p: number) => {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;

/** fetch for the setup: start-up and first requests stall the loop, so a shed 429 is retried. */
async function patient(url: string, init: RequestInit = {}): Promise<Response> {
  for (;;) {
    const response = await fetch(url, init);
    if (response.status !== 429) return response;
    await response.arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function setup(url: string, databaseUrl: string) {
  const { default: pg } = await import("pg");
  const db = new pg.Client({ connectionString: databaseUrl });
  db.on("error", () => undefined);
  await db.connect();
  const users: { auth: Record<string, string>; conversation: string; persona: string }[] = [];
  for (let i = 0; i < USERS; i++) {
    const suffix = `${Date.now().toString(36)}${i}`;
    const registered = await patient(`${url}/v1/auth/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: `load_${suffix}@example.com`, username: `load_${suffix}`, password: "Correct-horse-9" }),
    }).then((r) => r.json() as Promise<{ access_token: string; user: { id: string } }>);
    // The creator plan's monthly messages leave room for the whole run.
    await db.query("UPDATE users SET plan = 'creator' WHERE id = $1", [registered.user.id]);
    const auth = { authorization: `Bearer ${registered.access_token}`, "content-type": "application/json" };
    const persona = (await patient(`${url}/v1/personas`, { method: "POST", headers: auth, body: JSON.stringify({ name: `Load ${i}`, instructions: "Answer briefly." }) }).then((r) => r.json())) as { id: string };
    const conversation = (await patient(`${url}/v1/conversations`, { method: "POST", headers: auth, body: JSON.stringify({ persona_id: persona.id }) }).then((r) => r.json())) as { id: string };
    users.push({ auth, conversation: conversation.id, persona: persona.id });
  }
  await db.end();
  return users;
}

type Users = Awaited<ReturnType<typeof setup>>;

const KINDS = ["read", "list", "send", "stream"] as const;
type Kind = (typeof KINDS)[number];

/** One request of the mix: 60% reads, 20% blocking sends, 20% streams (read to the end). */
async function one(url: string, users: Users, n: number): Promise<Sample> {
  const user = users[n % users.length]!;
  const mix = n % 10;
  const kind: Kind = mix < 3 ? "read" : mix < 6 ? "list" : mix < 8 ? "send" : "stream";
  const started = performance.now();
  try {
    let response: Response;
    if (kind === "read") response = await fetch(`${url}/v1/personas/${user.persona}`, { headers: user.auth });
    else if (kind === "list") response = await fetch(`${url}/v1/conversations/${user.conversation}/messages?limit=20`, { headers: user.auth });
    else if (kind === "send") response = await fetch(`${url}/v1/conversations/${user.conversation}/messages`, { method: "POST", headers: user.auth, body: JSON.stringify({ content: `hello ${n}` }) });
    else response = await fetch(`${url}/v1/conversations/${user.conversation}/messages/stream`, { method: "POST", headers: user.auth, body: JSON.stringify({ content: `stream ${n}` }) });
    await response.arrayBuffer();
    return { kind, status: response.status, ms: performance.now() - started, retryAfter: Boolean(response.headers.get("retry-after")), reset: false };
  } catch {
    return { kind, status: 0, ms: performance.now() - started, retryAfter: false, reset: true };
  }
}

/** Offers `rate` requests/s open-loop for `seconds`; answers every sample once all have ended. */
async function offer(url: string, users: Users, rate: number, seconds: number, onTick?: () => void): Promise<{ samples: Sample[]; elapsedS: number }> {
  const pending: Promise<Sample>[] = [];
  const started = performance.now();
  const total = Math.round(rate * seconds);
  let lastTick = started;
  for (let n = 0; n < total; n++) {
    const due = started + (n * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    pending.push(one(url, users, n));
    if (onTick && performance.now() - lastTick > 1000) {
      lastTick = performance.now();
      onTick();
    }
  }
  const samples = await Promise.all(pending);
  return { samples, elapsedS: (performance.now() - started) / 1000 };
}

function report(label: string, samples: Sample[], elapsedS: number) {
  const admitted = samples.filter((s) => s.status >= 200 && s.status < 300);
  const byStatus: Record<string, number> = {};
  for (const s of samples) byStatus[s.reset ? "reset" : String(s.status)] = (byStatus[s.reset ? "reset" : String(s.status)] ?? 0) + 1;
  const p99 = percentile(admitted.map((s) => s.ms), 99);
  const byKind = KINDS.map((kind) => `${kind} ${percentile(admitted.filter((s) => s.kind === kind).map((s) => s.ms), 99).toFixed(0)}`).join(", ");
  console.log(`${label}: ${samples.length} requests in ${elapsedS.toFixed(1)} s, admitted ${admitted.length} (${(admitted.length / elapsedS).toFixed(0)}/s), p50 ${percentile(admitted.map((s) => s.ms), 50).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms (${byKind}), answers ${JSON.stringify(byStatus)}`);
  return { admitted, byStatus, p99 };
}

let dropScratch: (() => Promise<void>) | undefined;

async function run() {
  const scratch = process.env.BENCH_DATABASE_URL ? await scratchDatabase(process.env.BENCH_DATABASE_URL, "overload") : undefined;
  dropScratch = scratch?.drop;
  // Admission bounded to what can be worked on at once: the embedded database is one session; on
  // PostgreSQL the service's own CPU (one event loop) saturates first: with the pool's 10, at 2x
  // nearly all was admitted and p99 was 9x. A wait of at most 200 ms. The service's generous
  // defaults never shed in normal use but do not hold the latency rule
  // (docs/adr/0050-load-shedding-answers-429-admission-control-and-an-event.md).
  const admissionEnv = {
    ADMISSION_MAX_IN_FLIGHT: process.env.BENCH_ADMISSION_IN_FLIGHT ?? (scratch ? "4" : "2"),
    ADMISSION_QUEUE: process.env.BENCH_ADMISSION_QUEUE ?? "1024",
    ADMISSION_QUEUE_MS: process.env.BENCH_ADMISSION_QUEUE_MS ?? "200",
  };
  const settings = { LOAD_SHED_DELAY_MS: process.env.BENCH_SHED_MS ?? "300", ...admissionEnv };
  console.log(`database: ${scratch ? "PostgreSQL" : "embedded (in memory)"}; settings ${JSON.stringify(settings)}; load ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`);
  const env: Record<string, string> = { ...settings, ...(scratch ? { DATABASE_URL: scratch.url } : {}) };
  const started = await startPersona(env);
  group.add(started.child);
  const { url } = started;
  const pid = started.child.child.pid!;
  const users = await setup(url, started.databaseUrl);

  // Warm-up (until nothing is shed), then the unloaded baseline: one request at a time.
  for (let n = 0; n < 200 || (await one(url, users, n)).status === 429; n++) await one(url, users, n);
  const baseline: Sample[] = [];
  const baselineStarted = performance.now();
  for (let n = 0; n < 300; n++) baseline.push(await one(url, users, n));
  const unloadedP99 = percentile(baseline.filter((s) => s.status < 300).map((s) => s.ms), 99);
  report("unloaded (sequential)", baseline, (performance.now() - baselineStarted) / 1000);

  let sustainable = 0;
  const first = Number(process.env.BENCH_START_RATE ?? 5);
  for (let rate = first; rate <= 6400; rate = Math.round(rate * 1.5)) {
    const { samples, elapsedS } = await offer(url, users, rate, STEP_SECONDS);
    const { admitted, p99 } = report(`step ${rate}/s`, samples, elapsedS);
    const kept = admitted.length === samples.length && p99 <= 5 * unloadedP99 && elapsedS <= STEP_SECONDS * 1.2;
    if (!kept) break;
    sustainable = rate;
  }
  if (sustainable === 0) sustainable = first;
  const rssBefore = rssMb(pid);
  let rssPeak = rssBefore;
  console.log(`sustainable: ${sustainable}/s; offering ${2 * sustainable}/s for ${SECONDS} s (RSS before ${rssBefore.toFixed(0)} MB)`);
  const { samples, elapsedS } = await offer(url, users, 2 * sustainable, SECONDS, () => (rssPeak = Math.max(rssPeak, rssMb(pid))));
  rssPeak = Math.max(rssPeak, rssMb(pid));
  const { admitted, p99 } = report(`overload ${2 * sustainable}/s`, samples, elapsedS);
  const bad = samples.filter((s) => s.reset || s.status >= 500 || (s.status === 429 && !s.retryAfter) || (s.status >= 300 && s.status !== 429));
  const p99Ratio = p99 / unloadedP99;
  const rssRatio = rssPeak / rssBefore;
  console.log(`load ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`);
  console.log(`figures: sustainable ${sustainable}/s; at 2x: admitted ${(admitted.length / elapsedS).toFixed(0)}/s (${((admitted.length / samples.length) * 100).toFixed(0)}%), p99 admitted ${p99.toFixed(1)} ms = ${p99Ratio.toFixed(2)}x unloaded; RSS peak ${rssPeak.toFixed(0)} MB = ${rssRatio.toFixed(2)}x before; bad answers ${bad.length}`);
  const failures = [
    bad.length > 0 ? `${bad.length} answers neither 2xx nor 429 with Retry-After` : "",
    p99Ratio > 5 ? `p99 of admitted requests ${p99Ratio.toFixed(2)}x unloaded (limit 5x)` : "",
    rssRatio > 2 ? `RSS grew ${rssRatio.toFixed(2)}x (limit 2x)` : "",
  ].filter(Boolean);
  await group.stopAll();
  await dropScratch?.();
  if (failures.length) {
    console.log(`FAIL: ${failures.join("; ")}`);
    process.exit(1);
  }
  console.log("PASS");
}

run().catch(async (error: unknown) => {
  console.error(error);
  group.dump();
  await group.stopAll();
  await dropScratch?.().catch(() => undefined);
  process.exit(1);
});
