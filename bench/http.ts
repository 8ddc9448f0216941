// `npm run bench:http`: what Persona's request path costs next to baselines measured side by side
// in the same run, under autocannon (50 connections):
//   GET /healthz and a validated 400       vs bare Express 5 and bare node:http answering the same bytes;
//                                          the 400 also vs Express 5 + Ajv checking the same schema
//   authenticated GET /v1/personas/:id     vs a bare node:http + pg handler running the same SQL
//                                          (credential lookup, then the persona read), with a session
//                                          token and with an API key; on the embedded default, and with
//                                          BENCH_DATABASE_URL on PostgreSQL with 1 and 2 processes
//                                          (`persona serve --processes N` against the bare handler on N)
// Each comparison is measured BENCH_ROUNDS times (default 2), interleaved; ranges are printed, and
// every target with its ratio and a met/missed verdict. BENCH_SECONDS per measurement (default 6).
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { childGroup } from "./lib/children.ts";
import { scratchDatabase } from "./lib/database.ts";
import { measure, type LoadOptions, type LoadRequest, type LoadResult } from "./lib/load.ts";
import { freePort, startNode, type Child } from "./lib/processes.ts";
import { embeddedSocket } from "./lib/persona.ts";
import { json } from "./lib/requests.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const load: LoadOptions = { connections: 50, durationS: Number(process.env.BENCH_SECONDS ?? 6), warmupS: 2, pipelining: 1 };
const TARGETS = { healthz: 0.85, validated: 0.75, validatedAjv: 1, authPostgres: 0.7, authEmbedded: 0.5 };

const healthz: LoadRequest = { method: "GET", path: "/healthz" };
const invalidLogin: LoadRequest = {
  method: "POST",
  path: "/v1/auth/login",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ email: "not-an-email", password: "" }),
};

const group = childGroup();
const limits = { LOG_LEVEL: "warn", RATE_LIMIT_PER_MINUTE: "1000000", AUTH_ATTEMPTS_PER_IP: "1000000", AUTH_ATTEMPTS_PER_EMAIL: "1000000" };

async function answer(url: string, request: LoadRequest) {
  const response = await fetch(url + request.path, { method: request.method, headers: request.headers, body: request.body });
  return { status: response.status, contentType: response.headers.get("content-type") ?? "", body: await response.text() };
}

/** Persona: `persona serve --processes N` (N = 1 is `npm start`'s path, through the CLI). */
async function startPersona(env: Record<string, string>, processes: number): Promise<Child> {
  const port = await freePort();
  return group.add(
    await startNode(`persona x${processes}`, [`${root}cli/persona.ts`, "serve", "--processes", String(processes)], { ...limits, PORT: String(port), HOST: "127.0.0.1", ...env }, `http://127.0.0.1:${port}`, "/readyz", 180_000),
  );
}

async function startBarePg(databaseUrl: string, processes: number): Promise<Child> {
  const port = await freePort();
  return group.add(await startNode(`bare node:http + pg x${processes}`, [`${root}bench/lib/bare-pg.ts`], { PORT: String(port), DATABASE_URL: databaseUrl, PROCESSES: String(processes) }, `http://127.0.0.1:${port}`, "/healthz"));
}

/** A user with a session token, an API key and a persona, through the API. */
async function setUp(url: string): Promise<{ session: Record<string, string>; key: Record<string, string>; personaId: string }> {
  const suffix = randomBytes(4).toString("hex");
  const registered = await json(url, "/v1/auth/register", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: `bench_${suffix}@example.com`, username: `bench_${suffix}`, password: "Correct-horse-9" }),
  });
  if (registered.status !== 201) throw new Error(`register answered ${registered.status}`);
  const session = { authorization: `Bearer ${registered.body.access_token as string}` };
  const created = await json(url, "/v1/auth/api-keys", { method: "POST", headers: { ...session, "content-type": "application/json" }, body: JSON.stringify({ name: "bench", scopes: ["admin"] }) });
  if (created.status !== 201) throw new Error(`api key answered ${created.status}`);
  const persona = await json(url, "/v1/personas", {
    method: "POST",
    headers: { ...session, "content-type": "application/json" },
    body: JSON.stringify({ name: "Bench", instructions: "You are a benchmark persona.", greeting_message: "Hello!" }),
  });
  if (persona.status !== 201) throw new Error(`persona create answered ${persona.status}`);
  return { session, key: { "x-api-key": created.body.key as string }, personaId: persona.body.id as string };
}

interface Comparison {
  label: string;
  target: number;
  /** What is compared: [measured, baseline], each a url and a request. */
  measured: { url: string; request: LoadRequest; status: number; pid?: number | undefined };
  baseline: { url: string; request: LoadRequest; status: number; pid?: number | undefined };
  label2: string;
  results: { measured: LoadResult; baseline: LoadResult }[];
}

const comparisons: Comparison[] = [];
const problems: string[] = [];

async function run(comparison: Comparison): Promise<void> {
  for (const side of [comparison.measured, comparison.baseline]) {
    const check = await answer(side.url, side.request);
    if (check.status !== side.status) throw new Error(`${comparison.label}: ${side.url}${side.request.path} answered ${check.status}: ${check.body.slice(0, 200)}`);
  }
  const measured = await measure(comparison.measured.url, comparison.measured.request, load, comparison.measured.pid);
  const baseline = await measure(comparison.baseline.url, comparison.baseline.request, load, comparison.baseline.pid);
  for (const [result, side] of [[measured, comparison.measured], [baseline, comparison.baseline]] as const) {
    const others = Object.keys(result.statusCounts).filter((status) => Number(status) !== side.status);
    if (others.length || result.errors || result.timeouts) problems.push(`${comparison.label}: want all ${side.status}, got ${JSON.stringify(result.statusCounts)} errors=${result.errors} timeouts=${result.timeouts}`);
  }
  comparison.results.push({ measured, baseline });
  process.stderr.write(`  ${comparison.label}: ${measured.requestsPerSecond.toFixed(0)} vs ${baseline.requestsPerSecond.toFixed(0)} req/s\n`);
}

const range = (values: number[], digits = 2) => {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor((sorted.length - 1) / 2)]!;
  return { median, text: sorted.length > 1 ? `${median.toFixed(digits)} (${sorted[0]!.toFixed(digits)}-${sorted.at(-1)!.toFixed(digits)})` : median.toFixed(digits) };
};

async function main(): Promise<number> {
  console.log(`node ${process.version} (${process.platform}/${process.arch}); ${ROUNDS} round(s); autocannon ${load.connections} connections, ${load.warmupS} s warm-up + ${load.durationS} s per measurement`);
  const socket = embeddedSocket();
  const embedded = await startPersona({ EMBEDDED_DB_IN_MEMORY: "true", EMBEDDED_DB_SOCKET_DIR: socket.dir, DATABASE_URL: "" }, 1);
  const embeddedDb = socket.url;
  const reference = { healthz: await answer(embedded.url, healthz), invalid: await answer(embedded.url, invalidLogin) };
  const routes = [
    { method: "GET", path: healthz.path, ...reference.healthz },
    { method: "POST", path: invalidLogin.path, ...reference.invalid },
  ];
  const barePort = await freePort();
  const bare = group.add(await startNode("bare node:http", [`${root}bench/lib/bare-server.ts`], { PORT: String(barePort), BARE_ROUTES: JSON.stringify(routes) }, `http://127.0.0.1:${barePort}`, "/healthz"));
  const expressPort = await freePort();
  const bareExpress = group.add(await startNode("bare Express", [`${root}bench/lib/bare-express.ts`], { PORT: String(expressPort), BARE_ROUTES: JSON.stringify(routes) }, `http://127.0.0.1:${expressPort}`, "/healthz"));
  for (const [name, request, want] of [["healthz", healthz, reference.healthz], ["invalid login", invalidLogin, reference.invalid]] as const) {
    for (const other of [bare, bareExpress]) {
      const got = await answer(other.url, request);
      if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`${other.name} ${name} differs from persona: ${JSON.stringify(got)} vs ${JSON.stringify(want)}`);
    }
  }
  const ajvPort = await freePort();
  const expressAjv = group.add(await startNode("Express 5 + Ajv", [`${root}bench/lib/bare-express-ajv.ts`], { PORT: String(ajvPort) }, `http://127.0.0.1:${ajvPort}`, "/healthz"));
  const user = await setUp(embedded.url);
  const barePgEmbedded = await startBarePg(embeddedDb, 1);
  const read = (headers: Record<string, string>): LoadRequest => ({ method: "GET", path: `/v1/personas/${user.personaId}`, headers });
  const add = (label: string, label2: string, target: number, measured: Comparison["measured"], baseline: Comparison["baseline"]) => {
    const comparison: Comparison = { label, label2, target, measured, baseline, results: [] };
    comparisons.push(comparison);
    return comparison;
  };
  const embeddedSet = [
    add("GET /healthz", "of bare Express 5", TARGETS.healthz, { url: embedded.url, pid: embedded.child.pid, request: healthz, status: 200 }, { url: bareExpress.url, pid: bareExpress.child.pid, request: healthz, status: 200 }),
    add("validated 400 (POST /v1/auth/login)", "of bare Express 5", TARGETS.validated, { url: embedded.url, pid: embedded.child.pid, request: invalidLogin, status: 400 }, { url: bareExpress.url, pid: bareExpress.child.pid, request: invalidLogin, status: 400 }),
    add("validated 400 (POST /v1/auth/login), schema checked", "of Express 5 + Ajv with the same schema", TARGETS.validatedAjv, { url: embedded.url, pid: embedded.child.pid, request: invalidLogin, status: 400 }, { url: expressAjv.url, pid: expressAjv.child.pid, request: invalidLogin, status: 400 }),
    add("GET /healthz (context)", "of bare node:http", 0, { url: embedded.url, pid: embedded.child.pid, request: healthz, status: 200 }, { url: bare.url, pid: bare.child.pid, request: healthz, status: 200 }),
    add("authenticated GET persona, session, embedded", "of bare node:http + pg", TARGETS.authEmbedded, { url: embedded.url, pid: embedded.child.pid, request: read(user.session), status: 200 }, { url: barePgEmbedded.url, pid: barePgEmbedded.child.pid, request: read(user.session), status: 200 }),
    add("authenticated GET persona, API key, embedded", "of bare node:http + pg", TARGETS.authEmbedded, { url: embedded.url, pid: embedded.child.pid, request: read(user.key), status: 200 }, { url: barePgEmbedded.url, pid: barePgEmbedded.child.pid, request: read(user.key), status: 200 }),
  ];
  for (let round = 0; round < ROUNDS; round++) for (const comparison of embeddedSet) await run(comparison);
  for (const child of [barePgEmbedded, embedded]) await child.stop();

  const server = process.env.BENCH_DATABASE_URL;
  let database: Awaited<ReturnType<typeof scratchDatabase>> | undefined;
  if (server) {
    database = await scratchDatabase(server, "http");
    try {
      let pgUser: Awaited<ReturnType<typeof setUp>> | undefined;
      for (const processes of [1, 2]) {
        const persona = await startPersona({ DATABASE_URL: database.url }, processes);
        pgUser ??= await setUp(persona.url);
        const barePg = await startBarePg(database.url, processes);
        const pgRead = (headers: Record<string, string>): LoadRequest => ({ method: "GET", path: `/v1/personas/${pgUser!.personaId}`, headers });
        const set = [
          add(`authenticated GET persona, session, PostgreSQL, ${processes} process(es)`, `of bare node:http + pg x${processes}`, TARGETS.authPostgres, { url: persona.url, pid: persona.child.pid, request: pgRead(pgUser.session), status: 200 }, { url: barePg.url, pid: barePg.child.pid, request: pgRead(pgUser.session), status: 200 }),
          add(`authenticated GET persona, API key, PostgreSQL, ${processes} process(es)`, `of bare node:http + pg x${processes}`, TARGETS.authPostgres, { url: persona.url, pid: persona.child.pid, request: pgRead(pgUser.key), status: 200 }, { url: barePg.url, pid: barePg.child.pid, request: pgRead(pgUser.key), status: 200 }),
        ];
        for (let round = 0; round < ROUNDS; round++) for (const comparison of set) await run(comparison);
        for (const child of [barePg, persona]) await child.stop();
      }
    } finally {
      await database.drop();
    }
  } else {
    console.log("(BENCH_DATABASE_URL unset: the PostgreSQL comparisons are skipped)");
  }

  console.log("");
  console.log(`${"comparison".padEnd(62)} ${"Persona req/s".padStart(15)} ${"baseline req/s".padStart(15)}  ratio median (range)`);
  for (const comparison of comparisons) {
    const ratio = range(comparison.results.map((r) => r.measured.requestsPerSecond / r.baseline.requestsPerSecond));
    const rps = (pick: (r: Comparison["results"][number]) => LoadResult) => range(comparison.results.map((r) => pick(r).requestsPerSecond), 0).text;
    console.log(`${comparison.label.padEnd(62)} ${rps((r) => r.measured).padStart(15)} ${rps((r) => r.baseline).padStart(15)}  ${ratio.text} ${comparison.label2}`);
  }
  // The load generator shares the machine: CPU per request is the steadier measure of work done.
  console.log("");
  console.log(`${"server CPU per request (ms; baseline / Persona = the throughput ratio a CPU-bound server would reach)".padEnd(62)}`);
  for (const comparison of comparisons) {
    const cpu = (pick: (r: Comparison["results"][number]) => LoadResult) => range(comparison.results.map((r) => pick(r).cpuMsPerRequest ?? NaN), 3).text;
    const ratio = range(comparison.results.map((r) => (r.baseline.cpuMsPerRequest ?? NaN) / (r.measured.cpuMsPerRequest ?? NaN)));
    console.log(`${comparison.label.padEnd(62)} ${cpu((r) => r.measured).padStart(15)} ${cpu((r) => r.baseline).padStart(15)}  ${ratio.text}`);
  }
  console.log("");
  for (const comparison of comparisons.filter((c) => c.target > 0)) {
    const ratio = range(comparison.results.map((r) => r.measured.requestsPerSecond / r.baseline.requestsPerSecond));
    console.log(`bench:http ${comparison.label}: ${ratio.text} ${comparison.label2} (target >= ${comparison.target.toFixed(2)}: ${ratio.median >= comparison.target ? "met" : "MISSED"})`);
  }
  for (const problem of problems) console.log(`bench:http: ${problem}`);
  return problems.length ? 1 : 0;
}

let code = 1;
try {
  code = await main();
} catch (error) {
  console.error(`bench:http failed: ${error instanceof Error ? error.message : String(error)}`);
  group.dump();
} finally {
  await group.stopAll();
}
process.exitCode = code;
