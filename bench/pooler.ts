// `node bench/pooler.ts`: what running behind a pooler in transaction mode costs the chat path.
// Named prepared statements are off there (DATABASE_PREPARED_STATEMENTS, ADR 0341): PostgreSQL then
// parses and plans the chat turn's large statements on every send. Three Persona processes, each on
// a scratch database of its own, take blocking sends (POST /v1/conversations/:id/messages, an instant
// fake upstream) in a closed loop, in alternating rounds:
//   named     directly to PostgreSQL, prepared statements on (the default)
//   unnamed   directly to PostgreSQL, DATABASE_PREPARED_STATEMENTS=false
//   pgbouncer through PgBouncer in transaction mode (DATABASE_POOLER=transaction), when BENCH_POOLER_URL is set
// For each: sends/s, Persona's CPU per send, PostgreSQL's (this cluster's backends only) and
// PgBouncer's, and the ratios to `named`.
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:55432/postgres \
//   BENCH_POOLER_URL=postgres://postgres@127.0.0.1:26432/postgres node bench/pooler.ts
// (scripts/ci/postgres.sh and scripts/ci/pgbouncer.sh start them.) BENCH_ROUNDS (default 3),
// BENCH_SECONDS per round (default 6), BENCH_CLIENTS (default 10).
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import pg from "pg";
import { startFakeOpenAI } from "../test/fakes/openai-server.ts";
import { childGroup } from "./lib/children.ts";
import { benchServer, scratchDatabase } from "./lib/database.ts";
import { cpuMsOf } from "./lib/load.ts";
import { startPersona } from "./lib/persona.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 10);

const group = childGroup();

/** User + system CPU ms of a process from /proc (0 once it is gone). */
function processCpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

/** The processes whose parent is `parent` (a postmaster's backends), or whose name is `comm`. */
function pids(match: { parent?: number; comm?: string }): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if ((match.parent !== undefined && ppid === match.parent) || (match.comm !== undefined && comm === match.comm)) found.push(Number(entry));
    } catch {
      // ended meanwhile
    }
  }
  return found;
}

const cpuOf = (list: number[]) => list.reduce((sum, pid) => sum + processCpuMs(pid), 0);

/** The postmaster of the cluster at `url` (the parent of a backend), so that other clusters on this machine are not counted. */
async function postmasterOf(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const backend = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
    return Number(readFileSync(`/proc/${backend}/stat`, "utf8").replace(/^.*\) /, "").split(" ")[1]);
  } finally {
    await client.end();
  }
}

interface Setup {
  name: string;
  env: (database: { url: string; name: string }) => Record<string, string>;
}

const server = benchServer();
const pooler = process.env.BENCH_POOLER_URL;
const setups: Setup[] = [
  { name: "named", env: (db) => ({ DATABASE_URL: db.url }) },
  { name: "unnamed", env: (db) => ({ DATABASE_URL: db.url, DATABASE_PREPARED_STATEMENTS: "false" }) },
  ...(pooler
    ? [
        {
          name: "pgbouncer",
          env: (db: { url: string; name: string }) => {
            const through = new URL(pooler);
            through.pathname = `/${db.name}`;
            return { DATABASE_URL: through.toString(), DATABASE_LISTEN_URL: db.url, DATABASE_POOLER: "transaction" };
          },
        },
      ]
    : []),
];

interface Running {
  setup: Setup;
  url: string;
  pid: number;
  auth: Record<string, string>;
  personaId: string;
  drop: () => Promise<void>;
}

async function post(url: string, path: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url + path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function start(setup: Setup, upstream: string): Promise<Running> {
  const database = await scratchDatabase(server, `pooler_${setup.name}`);
  const persona = await startPersona({ ...setup.env(database), LLM_PROVIDER: "openai", EMBEDDINGS_PROVIDER: "local", OPENAI_BASE_URL: upstream, OPENAI_API_KEY: "bench", WORKER_ENABLED: "false", AUTO_AVATARS: "false" });
  group.add(persona.child);
  const suffix = randomBytes(4).toString("hex");
  const registered = await post(persona.url, "/v1/auth/register", {}, { email: `bench_${suffix}@example.com`, username: `bench_${suffix}`, password: "Correct-horse-9" });
  if (registered.status !== 201) throw new Error(`${setup.name}: register answered ${registered.status}`);
  // The creator plan's monthly messages leave room for the whole run.
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  await admin.query("UPDATE users SET plan = 'creator' WHERE id = $1", [(registered.body.user as { id: string }).id]);
  await admin.end();
  const auth = { authorization: `Bearer ${registered.body.access_token as string}` };
  const created = await post(persona.url, "/v1/personas", auth, { name: "Bench", instructions: "You are a benchmark persona. Answer briefly." });
  if (created.status !== 201) throw new Error(`${setup.name}: persona create answered ${created.status}`);
  return { setup, url: persona.url, pid: persona.child.child.pid!, auth, personaId: created.body.id as string, drop: database.drop };
}

interface Round {
  sends: number;
  ms: number;
  personaCpuMs: number;
  postgresCpuMs: number;
  poolerCpuMs: number;
}

/** `CLIENTS` clients, each on a conversation of its own, sending one message after another for `seconds`. */
async function round(running: Running, seconds: number, postmaster: number): Promise<Round> {
  const conversations = await Promise.all(
    Array.from({ length: CLIENTS }, async () => (await post(running.url, "/v1/conversations", running.auth, { persona_id: running.personaId })).body.id as string),
  );
  const backends = pids({ parent: postmaster });
  const bouncers = pids({ comm: "pgbouncer" });
  const before = { at: performance.now(), persona: cpuMsOf(running.pid), postgres: cpuOf(backends), pooler: cpuOf(bouncers) };
  const until = before.at + seconds * 1000;
  let sends = 0;
  await Promise.all(
    conversations.map(async (id) => {
      while (performance.now() < until) {
        const sent = await post(running.url, `/v1/conversations/${id}/messages`, running.auth, { content: "Hello there" });
        if (sent.status !== 201) throw new Error(`${running.setup.name}: a send answered ${sent.status}: ${JSON.stringify(sent.body)}`);
        sends++;
      }
    }),
  );
  return {
    sends,
    ms: performance.now() - before.at,
    personaCpuMs: cpuMsOf(running.pid) - before.persona,
    // Backends that began during the round are not counted: the pools are warm by then.
    postgresCpuMs: cpuOf(backends) - before.postgres,
    poolerCpuMs: cpuOf(bouncers) - before.pooler,
  };
}

const fake = await startFakeOpenAI();
const started: Running[] = [];
let code = 1;
try {
  console.log(`node ${process.version}; ${CLIENTS} clients sending blocking messages, ${ROUNDS} rounds of ${SECONDS} s per setup, alternating; instant fake upstream`);
  for (const setup of setups) started.push(await start(setup, fake.baseUrl));
  if (!pooler) console.log("BENCH_POOLER_URL unset: the PgBouncer setup is left out (scripts/ci/pgbouncer.sh starts one)");
  const postmaster = await postmasterOf(server);
  const totals = new Map<string, Round>(started.map((r) => [r.setup.name, { sends: 0, ms: 0, personaCpuMs: 0, postgresCpuMs: 0, poolerCpuMs: 0 }]));
  // A warm-up round each (pools, plans, JIT), not counted.
  for (const running of started) await round(running, 2, postmaster);
  for (let i = 0; i < ROUNDS; i++) {
    for (const running of started) {
      process.stderr.write(`  round ${i + 1}/${ROUNDS}: ${running.setup.name}...\n`);
      const r = await round(running, SECONDS, postmaster);
      const total = totals.get(running.setup.name)!;
      for (const key of Object.keys(r) as (keyof Round)[]) total[key] += r[key];
    }
  }
  const figures = [...totals].map(([name, t]) => ({
    name,
    perSecond: (t.sends * 1000) / t.ms,
    persona: t.personaCpuMs / t.sends,
    postgres: t.postgresCpuMs / t.sends,
    pooler: t.poolerCpuMs / t.sends,
    sends: t.sends,
  }));
  const base = figures[0]!;
  console.log("");
  console.log(`  ${"setup".padEnd(10)} ${"sends/s".padStart(8)} ${"ratio".padStart(6)} ${"Persona CPU ms/send".padStart(20)} ${"PG CPU ms/send".padStart(15)} ${"ratio".padStart(6)} ${"PgBouncer CPU ms/send".padStart(22)}  sends`);
  for (const f of figures) {
    console.log(
      `  ${f.name.padEnd(10)} ${f.perSecond.toFixed(0).padStart(8)} ${(f.perSecond / base.perSecond).toFixed(2).padStart(6)} ${f.persona.toFixed(2).padStart(20)} ${f.postgres.toFixed(2).padStart(15)} ${(f.postgres / base.postgres).toFixed(2).padStart(6)} ${(f.name === "pgbouncer" ? f.pooler.toFixed(2) : "-").padStart(22)}  ${f.sends}`,
    );
  }
  console.log("");
  for (const f of figures.slice(1)) {
    console.log(`bench:pooler ${f.name}/named: sends/s ${(f.perSecond / base.perSecond).toFixed(2)}, PostgreSQL CPU per send ${(f.postgres / base.postgres).toFixed(2)}, Persona CPU per send ${(f.persona / base.persona).toFixed(2)}`);
  }
  code = 0;
} catch (error) {
  console.error(`bench:pooler failed: ${error instanceof Error ? error.message : String(error)}`);
  group.dump();
} finally {
  await group.stopAll();
  await fake.close();
  for (const running of started) await running.drop().catch(() => undefined);
}
process.exitCode = code;
