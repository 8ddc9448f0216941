// `npm run bench:scale`: a capacity model, measured (issue 38, item 5; docs/design/scale.md). On a
// PostgreSQL 15 primary and one hot standby started here on loopback (test/support/replication.ts),
// with an instant fake model upstream:
// (a) per operation of the workload (lag-tolerant reads, blocking sends, streamed sends, room posts):
//     statements on the primary (pg_stat_statements), each kind alone, 1 API process, the jobs they
//     cause included (titles, room replies' fan-out), the idle rate subtracted;
// (b) the mixed workload in a closed loop (BENCH_CONCURRENCY clients, BENCH_SECONDS each) against
//     `persona serve --processes N` for N = 1, 2, 4, and N = 2 with the reads on the standby
//     (three quarters of the clients browse, a quarter chat):
//     requests/s in all and per kind, the ratio to one process, and the share of statements the
//     standby took. On a 2-core machine the absolute figures are small: the ratios and the
//     statements per operation are what carry to larger machines.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { startFakeOpenAI } from "../test/fakes/openai-server.ts";
import { startReplicatedPair } from "../test/support/replication.ts";
import { childGroup } from "./lib/children.ts";
import { freePort, startNode, type Child } from "./lib/processes.ts";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const USERS = Math.max(16, CONCURRENCY);
const root = new URL("..", import.meta.url).pathname;

type Kind = "read" | "send" | "stream" | "room post";
/**
 * The workload: most clients browse (lag-tolerant reads only), a quarter chat, each chatting client
 * in turn a blocking send, a streamed send, a room post and a read. A chatting client's reads stay on
 * the primary while it writes (read-your-writes, ADR 0325); a browsing client's may go to a standby.
 */
const CHATTERS = Math.max(1, Math.round(CONCURRENCY / 4));
const CHAT_MIX: Kind[] = ["send", "stream", "room post", "read"];

interface Seeded {
  token: string;
  conversation: string;
  room: string;
}

const pair = await startReplicatedPair({ applyDelayMs: 0, settings: ["shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track=top"] });
const fake = await startFakeOpenAI();
const group = childGroup();
const dbUrl = (base: string) => Object.assign(new URL(base), { pathname: "/persona_scale" }).toString();
const admin = async <T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
};
await admin(pair.primaryUrl, (c) => c.query("CREATE DATABASE persona_scale"));
await admin(dbUrl(pair.primaryUrl), (c) => c.query("CREATE EXTENSION pg_stat_statements"));

const baseEnv = {
  DATABASE_URL: dbUrl(pair.primaryUrl),
  LLM_PROVIDER: "openai",
  EMBEDDINGS_PROVIDER: "local",
  OPENAI_BASE_URL: fake.baseUrl,
  OPENAI_API_KEY: "bench",
  LOG_LEVEL: "warn",
  RATE_LIMIT_PER_MINUTE: "1000000",
  AUTH_ATTEMPTS_PER_IP: "1000000",
  AUTH_ATTEMPTS_PER_EMAIL: "1000000",
  STREAMS_PER_USER: "1000",
};

async function startServe(processes: number, env: Record<string, string> = {}): Promise<Child> {
  const port = await freePort();
  const child = await startNode(`persona serve --processes ${processes}`, [`${root}cli/persona.ts`, "serve", "--processes", String(processes)], { ...baseEnv, PORT: String(port), HOST: "127.0.0.1", ...env }, `http://127.0.0.1:${port}`, "/healthz", 120_000);
  group.add(child);
  return child;
}

async function call(url: string, method: string, path: string, token?: string, body?: unknown): Promise<Response> {
  return fetch(url + path, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
}

async function json<T>(response: Response): Promise<T> {
  if (!response.ok) throw new Error(`${response.url}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

async function seed(url: string): Promise<Seeded[]> {
  const users: Seeded[] = [];
  for (let i = 0; i < USERS; i++) {
    const s = randomBytes(4).toString("hex");
    const reg = await json<{ access_token: string; user: { id: string } }>(await call(url, "POST", "/v1/auth/register", undefined, { email: `s_${s}@example.com`, username: `s_${s}`, password: "Correct-horse-9" }));
    const token = reg.access_token;
    const persona = await json<{ id: string }>(await call(url, "POST", "/v1/personas", token, { name: `Scale ${i}`, instructions: "Be brief.", is_public: true }));
    const conversation = await json<{ id: string }>(await call(url, "POST", "/v1/conversations", token, { persona_id: persona.id }));
    const room = await json<{ id: string }>(await call(url, "POST", "/v1/rooms", token, { name: `Room ${i}` }));
    users.push({ token, conversation: conversation.id, room: room.id });
  }
  // The plan's monthly message quota is not what is measured.
  await admin(dbUrl(pair.primaryUrl), (c) => c.query("UPDATE users SET plan = 'creator'"));
  return users;
}

const READS = ["/v1/personas/explore", "/v1/marketplace", "/v1/conversations", "/v1/personas", "/v1/social/feed"];

async function one(url: string, kind: Kind, user: Seeded, n: number): Promise<boolean> {
  let response: Response;
  if (kind === "read") response = await call(url, "GET", READS[n % READS.length]!, user.token);
  else if (kind === "send") response = await call(url, "POST", `/v1/conversations/${user.conversation}/messages`, user.token, { content: "Say hello" });
  else if (kind === "stream") response = await call(url, "POST", `/v1/conversations/${user.conversation}/messages/stream`, user.token, { content: "Say hello" });
  else response = await call(url, "POST", `/v1/rooms/${user.room}/messages`, user.token, { content: "Hello room" });
  await response.arrayBuffer();
  return response.ok;
}

/** Statements so far on a server's bench database (top-level, pg_stat_statements; this count's own left out). */
async function statements(url: string): Promise<number> {
  return admin(url, async (c) => {
    const { rows } = await c.query<{ n: string }>(
      `SELECT coalesce(sum(calls), 0)::text AS n FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%pg_stat_statements%'`,
    );
    return Number(rows[0]!.n);
  });
}

async function perOperation(url: string, users: Seeded[]): Promise<Record<Kind | "idle", number>> {
  const N = 40;
  const out = {} as Record<Kind | "idle", number>;
  const primary = dbUrl(pair.primaryUrl);
  // The idle rate over the same time (the worker's polls, the pools' checks), subtracted.
  const before = await statements(primary);
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const idlePerMs = ((await statements(primary)) - before) / 3_000;
  out.idle = idlePerMs * 1000;
  for (const kind of ["read", "send", "stream", "room post"] as Kind[]) {
    const a = await statements(primary);
    const t0 = performance.now();
    for (let i = 0; i < N; i++) await one(url, kind, users[i % users.length]!, i);
    // The jobs a send causes (a title, a room's fan-out) finish shortly after it: counted with it.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const ms = performance.now() - t0;
    out[kind] = ((await statements(primary)) - a - idlePerMs * ms) / N;
  }
  return out;
}

async function mixed(url: string, users: Seeded[]): Promise<{ total: number; byKind: Record<Kind, number>; failed: number }> {
  const byKind: Record<Kind, number> = { read: 0, send: 0, stream: 0, "room post": 0 };
  let failed = 0;
  const run = async (seconds: number, count: boolean) => {
    const until = performance.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async (_, c) => {
        let n = c;
        // A client is one user: its sends to its conversation are one at a time, as a person's are;
        // browsing clients are users who do not write meanwhile.
        const user = users[c % users.length]!;
        while (performance.now() < until) {
          const kind = c < CHATTERS ? CHAT_MIX[n++ % CHAT_MIX.length]! : (n++, "read");
          const ok = await one(url, kind, user, n);
          if (!count) continue;
          if (ok) byKind[kind]++;
          else failed++;
        }
      }),
    );
  };
  await run(2, false);
  await run(SECONDS, true);
  const total = Object.values(byKind).reduce((a, b) => a + b, 0) / SECONDS;
  return { total, byKind: Object.fromEntries(Object.entries(byKind).map(([k, v]) => [k, v / SECONDS])) as Record<Kind, number>, failed };
}

try {
  console.log(`node ${process.version}; PostgreSQL 15 primary + 1 hot standby on loopback; ${CONCURRENCY} clients, ${SECONDS} s per configuration`);
  const first = await startServe(1);
  const users = await seed(first.url);
  const ops = await perOperation(first.url, users);
  console.log("\nstatements per operation on the primary (each kind alone, 1 API process, the jobs it causes included, idle rate subtracted):");
  for (const kind of ["read", "send", "stream", "room post"] as Kind[]) console.log(`  ${kind.padEnd(14)} ${ops[kind].toFixed(1).padStart(6)}`);
  console.log(`  (idle: ${ops.idle.toFixed(1)} statements/s)`);

  const rows: { label: string; total: number; byKind: Record<Kind, number>; failed: number; replicaShare?: number }[] = [];
  const configs: { label: string; processes: number; replica: boolean }[] = [
    { label: "1 API process", processes: 1, replica: false },
    { label: "2 API processes", processes: 2, replica: false },
    { label: "4 API processes", processes: 4, replica: false },
    { label: "2 API processes, reads on the standby", processes: 2, replica: true },
  ];
  let server: Child | undefined = first;
  for (const config of configs) {
    if (!server) server = await startServe(config.processes, config.replica ? { DATABASE_REPLICA_URLS: dbUrl(pair.replicaUrl), DATABASE_REPLICA_MAX_LAG_MS: "2000" } : {});
    console.log(`  ${config.label}...`);
    const [p0, r0] = await Promise.all([statements(dbUrl(pair.primaryUrl)), statements(dbUrl(pair.replicaUrl))]);
    const result = await mixed(server.url, users);
    const [p1, r1] = await Promise.all([statements(dbUrl(pair.primaryUrl)), statements(dbUrl(pair.replicaUrl))]);
    rows.push({ label: config.label, ...result, replicaShare: (r1 - r0) / (r1 - r0 + (p1 - p0)) });
    await server.stop();
    server = undefined;
  }
  const base = rows[0]!.total;
  console.log(`\nmixed workload, closed loop: ${CONCURRENCY - CHATTERS} clients browsing (reads), ${CHATTERS} chatting (send, stream, room post, read in turn):`);
  console.log("  configuration                              req/s  ratio   reads/s  sends/s  streams/s  posts/s  failed  statements on the standby");
  for (const row of rows) {
    console.log(
      `  ${row.label.padEnd(40)} ${row.total.toFixed(0).padStart(6)}  ${(row.total / base).toFixed(2).padStart(5)}  ${row.byKind.read.toFixed(0).padStart(8)}  ${row.byKind.send.toFixed(0).padStart(7)}  ${row.byKind.stream.toFixed(0).padStart(9)}  ${row.byKind["room post"].toFixed(0).padStart(7)}  ${String(row.failed).padStart(6)}  ${(100 * (row.replicaShare ?? 0)).toFixed(0).padStart(5)}%`,
    );
  }
  console.log(`\nbench:scale requests/s ratio, 2 processes / 1 = ${(rows[1]!.total / base).toFixed(2)}, 4 / 1 = ${(rows[2]!.total / base).toFixed(2)}, 2 with reads on the standby / 2 = ${(rows[3]!.total / rows[1]!.total).toFixed(2)} (this machine has 2 cores)`);
} finally {
  await group.stopAll();
  await fake.close();
  await pair.stop();
}
