import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pg from "pg";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { createApiClient, multipart, type ApiClient } from "../support/api.ts";
import { freePort } from "../support/ports.ts";
import { readEvents } from "../support/sse.ts";
import { startReceiver, type Receiver } from "../webhooks/receiver.ts";
import { startHaCluster, type HaCluster, type KillMode } from "./failover-cluster.ts";
import { startFailoverPooler, type FailoverPooler } from "./failover-pooler.ts";

// The failover scenario of issue 38 (bench/failover.ts runs it long, test/scale/failover.e2e.test.ts
// short): the Patroni cluster of scripts/ha/cluster.sh, two API processes (`persona serve
// --no-worker`) and one worker process (`persona worker`) on it through HAProxy, clients sending
// mixed traffic to both APIs, and the primary's postmaster killed with SIGKILL mid-traffic. It
// records every request's outcome and time, then checks what the clients saw acknowledged against
// the new primary's rows, and that jobs and streamed replies in flight ended.

const ROOT = resolve(import.meta.dirname, "..", "..");
const LIVENESS_LOCK_CLASS = 0x70657273; // server/toolkit/jobs/stale-locks.ts

export interface ScenarioOptions {
  /** HA_PORT_BASE of the cluster (scripts/ha/cluster.sh). */
  portBase: number;
  /** How long the clients send, from the first request. */
  trafficMs: number;
  /** When the primary is killed, from the first request. */
  killAfterMs: number;
  /** Client loops sending one request after another (each its own user, conversation and room). */
  clients: number;
  /** What is killed: the primary's postmaster (default), or the whole node with its Patroni. */
  kill?: KillMode;
  /** How long jobs, webhook deliveries and streamed replies may take to finish after the traffic. */
  settleMs?: number;
  /** The service reaches the cluster through PgBouncer in transaction mode (failover-pooler.ts), on this port. */
  poolerPort?: number;
  /** Progress lines. */
  log?: (line: string) => void;
}

type Operation = "send" | "stream" | "room" | "upload" | "persona" | "read" | "probe";
/** A row the client saw acknowledged (a 2xx with its id), by the table it must be in. */
type Table = "messages" | "personas" | "room_messages" | "knowledge_documents";

export interface RequestRecord {
  operation: Operation;
  /** Which API process (0 or 1). */
  api: number;
  /** ms from the kill (negative before it). */
  start: number;
  end: number;
  ok: boolean;
  /** HTTP status; 0 when no answer came (`error` says why). */
  status: number;
  /** The error envelope's code, a stream's `error` event code, or the client-side failure. */
  error?: string;
  retryAfter?: string;
  acknowledged: { table: Table; id: string }[];
  /** A streamed reply's generation, once its `start` was heard. */
  generation?: { conversationId: string; id: string };
}

export interface FailoverReport {
  clusterStartMs: number;
  killed: { node: string; pid: number; what: KillMode };
  /** The leader after the kill, and how long after it Patroni named it (ms). */
  newLeader: string | undefined;
  promotedAfterMs: number | undefined;
  requests: RequestRecord[];
  /** The probes: a room post every PROBE_MS, each sent without waiting for the ones before. */
  probes: RequestRecord[];
  /**
   * The unavailability window: the longest time after the kill in which no probe was answered
   * with success (ms), from the kill or a success to the next; infinite when none succeeded after
   * the kill. Probes sent meanwhile either wait (for a connection to the new
   * primary) or fail with 503.
   */
  windowMs: number;
  /** Failed answers (any request), from the kill: the first's and the last's time, and how many. */
  firstFailureAt: number | undefined;
  lastFailureAt: number | undefined;
  failed: number;
  /** The longest any request took, of those in flight at the kill or sent after it (ms). */
  longestMs: number;
  /** Answers other than 2xx and 503 with Retry-After (and stream `error` events with a code): what a client should never see. */
  unexpected: RequestRecord[];
  acknowledged: number;
  /** Acknowledged rows missing from the new primary. */
  lost: { table: Table; id: string }[];
  /** Every API process still the one started, answering /readyz 200, and the worker still running. */
  processesKept: boolean;
  readyAfter: boolean[];
  /** Requests in the last quarter of the traffic, and how many of them failed. */
  tail: { requests: number; failed: number };
  documents: Record<string, number>;
  webhooks: { expected: number; delivered: number };
  generations: Record<string, number>;
  /** Where the processes' output was written (kept when a check failed). */
  logDir: string;
}

interface Client {
  api: ApiClient[];
  /** Without a credential: its lag-tolerant reads go to a replica (DATABASE_REPLICA_URLS). */
  anonymous: ApiClient[];
  userId: string;
  personaId: string;
  conversationId: string;
  roomId: string;
}

interface Proc {
  name: string;
  child: ChildProcess;
  exited: boolean;
  stop: () => Promise<void>;
}

const sleep = (ms: number) => new Promise((wait) => setTimeout(wait, ms));

/** `node cli/persona.ts <args>` with its output in `logDir/<name>.log`. */
function startProcess(name: string, args: string[], env: Record<string, string>, logDir: string): Proc {
  const child = spawn(process.execPath, [join(ROOT, "cli/persona.ts"), ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const out = createWriteStream(join(logDir, `${name}.log`));
  child.stdout!.pipe(out);
  child.stderr!.pipe(out);
  const proc: Proc = {
    name,
    child,
    exited: false,
    stop: async () => {
      if (proc.exited) return;
      const gone = new Promise((done) => child.once("exit", done));
      child.kill("SIGTERM");
      const force = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await gone;
      clearTimeout(force);
    },
  };
  child.once("exit", () => (proc.exited = true));
  return proc;
}

async function waitFor(what: string, check: () => Promise<boolean>, ms: number, proc?: Proc): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (proc?.exited) throw new Error(`${proc.name} exited while waiting for ${what}`);
    if (await check().catch(() => false)) return;
    await sleep(200);
  }
  throw new Error(`${what}: not within ${ms} ms`);
}

const answers200 = (url: string) => async () => (await fetch(url, { signal: AbortSignal.timeout(2_000) })).status === 200;

async function query<T extends pg.QueryResultRow>(url: string, sql: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return (await client.query<T>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

/** The small knowledge document every upload sends (a new name each time). */
const DOCUMENT = "Mars is the fourth planet from the Sun.\nIts two moons are Phobos and Deimos.\nA day on Mars lasts 24 hours and 39 minutes.\n";

/** One request of `operation`, as a client sees it. */
async function perform(client: Client, api: number, operation: Operation, n: number, kill: () => number): Promise<RequestRecord> {
  const http = client.api[api]!;
  const signal = AbortSignal.timeout(30_000);
  const start = performance.now() - kill();
  const record: RequestRecord = { operation, api, start, end: 0, ok: false, status: 0, acknowledged: [] };
  const answered = (response: Response, error: unknown) => {
    record.status = response.status;
    record.retryAfter = response.headers.get("retry-after") ?? undefined;
    if (!response.ok) record.error = (error as { error?: { code?: string } } | undefined)?.error?.code ?? `http_${response.status}`;
  };
  try {
    if (operation === "send") {
      const { data, error, response } = await http.POST("/v1/conversations/{id}/messages", { params: { path: { id: client.conversationId } }, body: { content: `Hello ${n}` }, signal });
      answered(response, error);
      if (data) record.acknowledged.push({ table: "messages", id: data.user_message.id }, { table: "messages", id: data.assistant_message.id });
    } else if (operation === "stream") {
      const { error, response } = await http.POST("/v1/conversations/{id}/messages/stream", { params: { path: { id: client.conversationId } }, body: { content: `Tell me ${n}` }, parseAs: "stream", signal });
      answered(response, error);
      if (response.status === 200) {
        const { events } = await readEvents(response);
        for (const event of events) {
          const data = JSON.parse(event.data || "{}") as { generation_id?: string; message_id?: string; code?: string };
          if (event.event === "start" && data.generation_id) record.generation = { conversationId: client.conversationId, id: data.generation_id };
          if (event.event === "done" && data.message_id) record.acknowledged.push({ table: "messages", id: data.message_id });
          if (event.event === "error") record.error = `stream_${data.code ?? "error"}`;
        }
        if (!record.error && record.acknowledged.length === 0) record.error = "stream_cut";
      }
    } else if (operation === "room") {
      const { data, error, response } = await http.POST("/v1/rooms/{id}/messages", { params: { path: { id: client.roomId } }, body: { content: `Room post ${n}` }, signal });
      answered(response, error);
      if (data) record.acknowledged.push({ table: "room_messages", id: data.id });
    } else if (operation === "upload") {
      const form = new FormData();
      form.append("file", new Blob([DOCUMENT], { type: "text/plain" }), `mars-${n}.txt`);
      const { data, error, response } = await http.POST("/v1/knowledge/{persona_id}/documents", { params: { path: { persona_id: client.personaId } }, body: multipart<{ file: string }>(form), signal });
      answered(response, error);
      if (data) record.acknowledged.push({ table: "knowledge_documents", id: data.id });
    } else if (operation === "read") {
      const { error, response } = await client.anonymous[api]!.GET("/v1/marketplace", { signal });
      answered(response, error);
    } else {
      const { data, error, response } = await http.POST("/v1/personas", { body: { name: `Failover ${n}`, instructions: "Answer briefly." }, signal });
      answered(response, error);
      if (data) record.acknowledged.push({ table: "personas", id: data.id });
    }
  } catch (error) {
    // No answer: the connection failed or the deadline passed.
    record.error = signal.aborted ? "client_timeout" : `network: ${(error as Error).message}`;
  }
  record.end = performance.now() - kill();
  record.ok = record.status >= 200 && record.status < 300 && !record.error;
  return record;
}

/** The order each client cycles through: chat sends and streams most, then room posts, reads of the marketplace, uploads and new personas. */
const MIX: Operation[] = ["send", "stream", "room", "read", "send", "stream", "upload", "room", "read", "send", "stream", "persona"];

async function setUpClient(apis: string[], index: number, receiver: Receiver): Promise<Client> {
  const anonymous = createApiClient(apis[0]!);
  const suffix = `${Date.now().toString(36)}${index}`;
  const registered = await anonymous.POST("/v1/auth/register", { body: { email: `failover_${suffix}@example.com`, username: `failover_${suffix}`, password: "Correct-horse-9" } });
  if (!registered.data) throw new Error(`register answered ${registered.response.status}`);
  const headers = { authorization: `Bearer ${registered.data.access_token}` };
  const api = apis.map((url) => createApiClient(url, headers));
  const persona = await api[0]!.POST("/v1/personas", { body: { name: "Captain Failover", instructions: "Answer in a few words." } });
  if (!persona.data) throw new Error(`persona create answered ${persona.response.status}`);
  const conversation = await api[0]!.POST("/v1/conversations", { body: { persona_id: persona.data.id } });
  if (!conversation.data) throw new Error(`conversation create answered ${conversation.response.status}`);
  const room = await api[0]!.POST("/v1/rooms", { body: { name: "Failover room", persona_ids: [persona.data.id] } });
  if (!room.data) throw new Error(`room create answered ${room.response.status}`);
  const hook = await api[0]!.POST("/v1/webhooks", { body: { url: receiver.url, events: ["message.created"] } });
  if (!hook.data) throw new Error(`webhook create answered ${hook.response.status}`);
  return { api, anonymous: apis.map((url) => createApiClient(url)), userId: registered.data.user.id, personaId: persona.data.id, conversationId: conversation.data.id, roomId: room.data.id };
}

/** How often a probe is sent. */
const PROBE_MS = 100;

/** A user with a room of no personas: a post there is one write and nothing else (the probe). */
async function setUpProbe(apis: string[]): Promise<{ api: ApiClient[]; roomId: string }> {
  const suffix = `${Date.now().toString(36)}probe`;
  const registered = await createApiClient(apis[0]!).POST("/v1/auth/register", { body: { email: `failover_${suffix}@example.com`, username: `failover_${suffix}`, password: "Correct-horse-9" } });
  if (!registered.data) throw new Error(`register answered ${registered.response.status}`);
  const api = apis.map((url) => createApiClient(url, { authorization: `Bearer ${registered.data!.access_token}` }));
  const room = await api[0]!.POST("/v1/rooms", { body: { name: "Probe room" } });
  if (!room.data) throw new Error(`room create answered ${room.response.status}`);
  return { api, roomId: room.data.id };
}

async function probe(target: { api: ApiClient[]; roomId: string }, n: number, kill: () => number): Promise<RequestRecord> {
  const signal = AbortSignal.timeout(30_000);
  const record: RequestRecord = { operation: "probe", api: n % 2, start: performance.now() - kill(), end: 0, ok: false, status: 0, acknowledged: [] };
  try {
    const { data, error, response } = await target.api[n % 2]!.POST("/v1/rooms/{id}/messages", { params: { path: { id: target.roomId } }, body: { content: `probe ${n}` }, signal });
    record.status = response.status;
    record.retryAfter = response.headers.get("retry-after") ?? undefined;
    if (data) record.acknowledged.push({ table: "room_messages", id: data.id });
    else record.error = (error as { error?: { code?: string } } | undefined)?.error?.code ?? `http_${response.status}`;
  } catch (error) {
    record.error = signal.aborted ? "client_timeout" : `network: ${(error as Error).message}`;
  }
  record.end = performance.now() - kill();
  record.ok = record.status === 201;
  return record;
}

export async function runFailoverScenario(options: ScenarioOptions): Promise<FailoverReport> {
  const say = options.log ?? (() => undefined);
  const settleMs = options.settleMs ?? 90_000;
  const logDir = mkdtempSync(join(tmpdir(), "persona-failover-"));
  const dataDir = join(logDir, "data");
  const processes: Proc[] = [];
  let cluster: HaCluster | undefined;
  let pooler: FailoverPooler | undefined;
  let fake: FakeOpenAI | undefined;
  let receiver: Receiver | undefined;
  let passed = false;
  try {
    say("starting the cluster (scripts/ha/cluster.sh start)");
    cluster = await startHaCluster(options.portBase);
    if (options.poolerPort) {
      pooler = await startFailoverPooler(cluster.env, options.poolerPort);
      say(`PgBouncer (transaction mode) on port ${options.poolerPort} in front of HAProxy`);
    }
    say(`cluster ready in ${(cluster.startMs / 1000).toFixed(1)} s; leader ${await cluster.leader()}`);
    fake = await startFakeOpenAI();
    // Streams take about a second (20 words, 50 ms apart), so that some are in flight at the kill.
    fake.chat.always({ reply: "Mars has two small moons called Phobos and Deimos and a day there lasts a little longer than one on Earth does", chunkDelayMs: 50 });
    receiver = await startReceiver();
    const env: Record<string, string> = {
      ...cluster.env,
      ...pooler?.env,
      PERSONA_DATA_DIR: dataDir,
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      LOG_PRETTY: "false",
      LLM_PROVIDER: "openai",
      OPENAI_BASE_URL: fake.baseUrl,
      OPENAI_API_KEY: "failover",
      EMBEDDINGS_PROVIDER: "local",
      AUTO_AVATARS: "false",
      DEFAULT_PLAN: "creator",
      RATE_LIMIT_PER_MINUTE: "1000000",
      AUTH_ATTEMPTS_PER_IP: "1000000",
      AUTH_ATTEMPTS_PER_EMAIL: "1000000",
      WEBHOOKS_ALLOW_PRIVATE_URLS: "true",
      WEBHOOKS_RETRY_BASE_MS: "200",
      WORKER_POLL_INTERVAL_MS: "500",
      // A reply whose process could not store its end is recorded lost this long after (default 30 s).
      GENERATION_LEASE_MS: "10000",
    };
    const ports = [await freePort(), await freePort()];
    const apis = ports.map((port) => `http://127.0.0.1:${port}`);
    // The first API migrates the new database; the others start once it has.
    processes.push(startProcess("api1", ["serve", "--no-worker"], { ...env, PORT: String(ports[0]) }, logDir));
    await waitFor("api1 ready", answers200(`${apis[0]}/readyz`), 120_000, processes[0]);
    processes.push(startProcess("api2", ["serve", "--no-worker"], { ...env, PORT: String(ports[1]) }, logDir));
    processes.push(startProcess("worker", ["worker"], env, logDir));
    await waitFor("api2 ready", answers200(`${apis[1]}/readyz`), 120_000, processes[1]);
    // The worker holds its liveness lock once its pool runs (stale-locks.ts).
    const workerLocks = async () =>
      Number((await query<{ n: number }>(cluster!.env.DATABASE_URL!, "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND classid = $1", [LIVENESS_LOCK_CLASS]))[0]!.n) > 0;
    await waitFor("the worker running", workerLocks, 120_000, processes[2]);
    const pids = processes.map((proc) => proc.child.pid);
    say(`API processes on ${apis.join(", ")}, worker running; setting up ${options.clients} clients`);

    const clients = await Promise.all(Array.from({ length: options.clients }, (_, i) => setUpClient(apis, i, receiver!)));
    const prober = await setUpProbe(apis);

    // Traffic: every client sends one request after another, alternating between the APIs. After a
    // failure it retries in 200 ms rather than after Retry-After (2 s), so that the window is measured
    // finely rather than in steps of the header.
    const trafficStart = performance.now();
    const trafficEnd = trafficStart + options.trafficMs;
    // Times are kept from the kill: the planned one until it has happened.
    let killAt = Number.NaN;
    const sinceKill = () => (Number.isNaN(killAt) ? trafficStart + options.killAfterMs : killAt);
    const records: RequestRecord[] = [];
    const loops = clients.map(async (client, index) => {
      let n = index;
      while (performance.now() < trafficEnd) {
        const operation = MIX[n % MIX.length]!;
        const record = await perform(client, n % 2, operation, n, sinceKill);
        records.push(record);
        n++;
        await sleep(record.ok ? 20 : 200);
      }
    });
    const probes: RequestRecord[] = [];
    const probing = (async () => {
      const sent: Promise<void>[] = [];
      for (let n = 0; performance.now() < trafficEnd; n++) {
        sent.push(probe(prober, n, sinceKill).then((record) => void probes.push(record)));
        await sleep(PROBE_MS);
      }
      await Promise.all(sent);
    })();
    say(`traffic for ${options.trafficMs / 1000} s; the primary is killed after ${options.killAfterMs / 1000} s`);
    await sleep(options.killAfterMs);
    const killed = await cluster.killPrimary(options.kill);
    killAt = killed.at;
    say(`killed ${options.kill === "node" ? "Patroni and the postmaster" : "the postmaster"} of ${killed.node} (pid ${killed.pid})`);
    let newLeader: string | undefined;
    let promotedAfterMs: number | undefined;
    const watching = (async () => {
      while (performance.now() < trafficEnd + 30_000) {
        const leader = await cluster!.leader();
        if (leader && leader !== killed.node) {
          newLeader = leader;
          promotedAfterMs = performance.now() - killAt;
          return;
        }
        await sleep(100);
      }
    })();
    await Promise.all([...loops, probing, watching]);
    say(`traffic over: ${records.length} requests; new leader ${newLeader ?? "none"} after ${promotedAfterMs?.toFixed(0) ?? "-"} ms`);

    const everything = [...records, ...probes];
    const failures = everything.filter((record) => !record.ok).sort((a, b) => a.end - b.end);
    const firstFailureAt = failures[0]?.end;
    const lastFailureAt = failures.at(-1)?.end;
    const windowMs = longestGap(probes);
    const longestMs = Math.max(0, ...everything.filter((record) => record.end >= 0).map((record) => record.end - record.start));
    const unexpected = failures.filter((record) => !(record.status === 503 && Number(record.retryAfter) > 0) && !(record.status === 200 && record.error?.startsWith("stream_") && record.error !== "stream_cut"));
    const tailFrom = trafficEnd - killAt - options.trafficMs / 4;
    const tailRecords = everything.filter((record) => record.start >= tailFrom);

    // Every acknowledged row on the new primary (through HAProxy's primary port).
    const acknowledged = everything.flatMap((record) => record.acknowledged);
    const lost: { table: Table; id: string }[] = [];
    const byTable = new Map<Table, string[]>();
    for (const row of acknowledged) byTable.set(row.table, [...(byTable.get(row.table) ?? []), row.id]);
    for (const [table, ids] of byTable) {
      const found = new Set((await query<{ id: string }>(cluster.env.DATABASE_URL!, `SELECT id::text AS id FROM ${table} WHERE id = ANY($1::uuid[])`, [ids])).map((row) => row.id));
      for (const id of ids) if (!found.has(id)) lost.push({ table, id });
    }
    say(`acknowledged ${acknowledged.length} rows; ${lost.length} missing on the new primary`);

    // Jobs: every acknowledged document processed; every acknowledged message's webhook delivered.
    const documentIds = byTable.get("knowledge_documents") ?? [];
    let documents: Record<string, number> = {};
    const countDocuments = async () => {
      const rows = await query<{ status: string; n: number }>(cluster!.env.DATABASE_URL!, "SELECT status, count(*)::int AS n FROM knowledge_documents WHERE id = ANY($1::uuid[]) GROUP BY status", [documentIds]);
      documents = Object.fromEntries(rows.map((row) => [row.status, row.n]));
      return !documents.processing;
    };
    const messageIds = new Set(byTable.get("messages") ?? []);
    const delivered = () => {
      const seen = new Set<string>();
      for (const entry of receiver!.received) {
        const id = (JSON.parse(entry.raw) as { data?: { message_id?: string } }).data?.message_id;
        if (id && messageIds.has(id)) seen.add(id);
      }
      return seen.size;
    };
    // Streamed replies: each generation heard of ends (done, or failed: its store failed, or lost once its lease ran out).
    const generations = records.filter((record) => record.generation).map((record) => ({ ...record.generation!, api: record.api, client: clients.find((c) => c.conversationId === record.generation!.conversationId)! }));
    const generationStatus = new Map<string, string>();
    const countGenerations = async () => {
      for (const generation of generations) {
        if (generationStatus.has(generation.id) && generationStatus.get(generation.id) !== "running") continue;
        const { data } = await generation.client.api[0]!.GET("/v1/conversations/{id}/generations/{generation_id}", { params: { path: { id: generation.conversationId, generation_id: generation.id } } });
        if (data) generationStatus.set(generation.id, data.status);
      }
      return [...generationStatus.values()].every((status) => status !== "running") && generationStatus.size === generations.length;
    };
    const settleDeadline = Date.now() + settleMs;
    say("waiting for documents, webhook deliveries and streamed replies to end");
    while (Date.now() < settleDeadline) {
      const done = (await countDocuments().catch(() => false)) && delivered() === messageIds.size && (await countGenerations().catch(() => false));
      if (done) break;
      await sleep(500);
    }
    await countDocuments().catch(() => false);
    await countGenerations().catch(() => false);
    const generationCounts: Record<string, number> = {};
    for (const status of generationStatus.values()) generationCounts[status] = (generationCounts[status] ?? 0) + 1;
    if (generationStatus.size < generations.length) generationCounts.unknown = generations.length - generationStatus.size;

    const readyAfter = await Promise.all(apis.map((url) => answers200(`${url}/readyz`)().catch(() => false)));
    const processesKept = processes.every((proc, i) => !proc.exited && proc.child.pid === pids[i]) && readyAfter.every(Boolean);

    const report: FailoverReport = {
      clusterStartMs: cluster.startMs,
      killed: { node: killed.node, pid: killed.pid, what: options.kill ?? "postmaster" },
      newLeader,
      promotedAfterMs,
      requests: records,
      probes,
      windowMs,
      firstFailureAt,
      lastFailureAt,
      failed: failures.length,
      longestMs,
      unexpected,
      acknowledged: acknowledged.length,
      lost,
      processesKept,
      readyAfter,
      tail: { requests: tailRecords.length, failed: tailRecords.filter((record) => !record.ok).length },
      documents,
      webhooks: { expected: messageIds.size, delivered: delivered() },
      generations: generationCounts,
      logDir,
    };
    passed = lost.length === 0 && processesKept && unexpected.length === 0 && !process.env.FAILOVER_KEEP_LOGS;
    writeFileSync(join(logDir, "requests.json"), JSON.stringify(records, null, 1));
    return report;
  } finally {
    await Promise.allSettled(processes.map((proc) => proc.stop()));
    await receiver?.close();
    await fake?.close();
    await pooler?.stop();
    await cluster?.stop().catch((error: unknown) => say(`cluster stop: ${(error as Error).message}`));
    if (passed) rmSync(logDir, { recursive: true, force: true });
  }
}

/**
 * The longest time after the kill (at 0) without a successful probe answer: from the kill or a
 * success to the next success (by answer time); infinite when none came after the kill.
 */
function longestGap(probes: RequestRecord[]): number {
  const served = probes.filter((record) => record.ok).map((record) => record.end).sort((a, b) => a - b);
  const after = served.filter((at) => at > 0);
  if (after.length === 0) return Number.POSITIVE_INFINITY;
  let previous = 0;
  let longest = 0;
  for (const at of after) {
    longest = Math.max(longest, at - previous);
    previous = at;
  }
  return longest;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

/** The report as lines: the figures, the outcomes by operation, and what went wrong. */
export function describeReport(report: FailoverReport): string[] {
  const ms = (value: number | undefined) => (value === undefined ? "-" : `${(value / 1000).toFixed(2)} s`);
  const lines = [
    `killed ${report.killed.what === "node" ? "Patroni and the postmaster of " : ""}${report.killed.node} (postmaster pid ${report.killed.pid}); new leader ${report.newLeader ?? "none"} named ${ms(report.promotedAfterMs)} after the kill`,
    `unavailability window (the longest time after the kill without a successful probe answer): ${ms(report.windowMs)}`,
    `failed answers: ${report.failed}${report.failed ? `, from ${ms(report.firstFailureAt)} to ${ms(report.lastFailureAt)} after the kill` : ""}; the longest request in flight at or after the kill: ${ms(report.longestMs)}`,
  ];
  const all = [...report.requests, ...report.probes];
  const operations = [...new Set(all.map((record) => record.operation))];
  for (const operation of operations) {
    const of = all.filter((record) => record.operation === operation);
    const outcomes = new Map<string, number>();
    for (const record of of) {
      const key = record.ok ? String(record.status) : `${record.status || "no answer"}${record.error ? ` ${record.error}` : ""}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    }
    const latencies = of.filter((record) => record.ok).map((record) => record.end - record.start);
    lines.push(`  ${operation.padEnd(8)} ${String(of.length).padStart(5)} requests: ${[...outcomes].map(([key, n]) => `${key} ×${n}`).join(", ")}; ms p50 ${percentile(latencies, 50)?.toFixed(0) ?? "-"}, max ${Math.max(...of.map((record) => record.end - record.start)).toFixed(0)}`);
  }
  lines.push(
    `acknowledged rows: ${report.acknowledged}; missing on the new primary: ${report.lost.length}`,
    `processes kept (same pids, /readyz 200 after): ${report.processesKept}`,
    `last quarter of the traffic: ${report.tail.requests} requests, ${report.tail.failed} failed`,
    `documents: ${JSON.stringify(report.documents)}; webhook deliveries of acknowledged messages: ${report.webhooks.delivered}/${report.webhooks.expected}`,
    `streamed replies heard of: ${JSON.stringify(report.generations)}`,
  );
  for (const record of report.unexpected.slice(0, 10)) lines.push(`  unexpected: ${JSON.stringify(record)}`);
  if (report.lost.length > 0) lines.push(`  lost: ${JSON.stringify(report.lost.slice(0, 10))}`);
  return lines;
}
