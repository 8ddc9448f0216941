// `npm run bench:http`: requests/s of Persona (own child process, embedded in-memory PGlite) next
// to a bare node:http server answering the same bytes, under autocannon. See bench/lib/.
import { fileURLToPath } from "node:url";
import { measure, type LoadOptions, type LoadRequest, type LoadResult } from "./lib/load.ts";
import { childGroup } from "./lib/children.ts";
import { freePort, startNode } from "./lib/processes.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const load: LoadOptions = { connections: 50, durationS: 10, warmupS: 2, pipelining: 1 };
const TARGET = 0.5;

const healthz: LoadRequest = { method: "GET", path: "/healthz" };
const invalidLogin: LoadRequest = {
  method: "POST",
  path: "/v1/auth/login",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ email: "not-an-email", password: "" }),
};
const readyz: LoadRequest = { method: "GET", path: "/readyz" };

interface Bench {
  label: string;
  target: "persona" | "bare" | "express";
  request: LoadRequest;
  expectStatus: number;
}

const benches: Bench[] = [
  { label: "persona GET /healthz", target: "persona", request: healthz, expectStatus: 200 },
  { label: "persona validated JSON (400 from the contract validator)", target: "persona", request: invalidLogin, expectStatus: 400 },
  { label: "persona GET /readyz (database round trip)", target: "persona", request: readyz, expectStatus: 200 },
  { label: "bare node:http GET /healthz (same body)", target: "bare", request: healthz, expectStatus: 200 },
  { label: "bare node:http POST /v1/auth/login (same 400 body)", target: "bare", request: invalidLogin, expectStatus: 400 },
  { label: "bare Express 5 GET /healthz (same body; context)", target: "express", request: healthz, expectStatus: 200 },
  { label: "bare Express 5 POST /v1/auth/login (same 400; context)", target: "express", request: invalidLogin, expectStatus: 400 },
];

interface Answer {
  status: number;
  contentType: string;
  body: string;
}

async function answer(url: string, request: LoadRequest): Promise<Answer> {
  const response = await fetch(url + request.path, { method: request.method, headers: request.headers, body: request.body });
  return { status: response.status, contentType: response.headers.get("content-type") ?? "", body: await response.text() };
}

const group = childGroup();

const pad = (text: string, width: number) => text.padEnd(width);
const lpad = (text: string, width: number) => text.padStart(width);
const statuses = (result: LoadResult) =>
  Object.entries(result.statusCounts)
    .map(([status, count]) => `${status}x${count}`)
    .join(" ") || "-";

async function main(): Promise<number> {
  const personaPort = await freePort();
  const env: Record<string, string> = {
    PORT: String(personaPort),
    HOST: "127.0.0.1",
    EMBEDDED_DB_IN_MEMORY: "true",
    LOG_LEVEL: "warn",
    // The largest value config.ts accepts (int 1..1_000_000): far above what one run sends.
    RATE_LIMIT_PER_MINUTE: "1000000",
    WORKER_ENABLED: "true",
    DATABASE_URL: "", // the embedded PGlite database, whatever the calling shell has set
  };
  const persona = await startNode("persona", [`${root}server/main.ts`], env, `http://127.0.0.1:${personaPort}`, "/healthz");
  group.add(persona);

  // The bare server answers exactly what Persona answers (status, content type, bytes).
  const reference = { healthz: await answer(persona.url, healthz), invalid: await answer(persona.url, invalidLogin) };
  if (reference.healthz.status !== 200) throw new Error(`persona /healthz answered ${reference.healthz.status}: ${reference.healthz.body}`);
  if (reference.invalid.status !== 400) throw new Error(`persona invalid login answered ${reference.invalid.status}: ${reference.invalid.body}`);
  const routes = [
    { method: "GET", path: healthz.path, ...reference.healthz },
    { method: "POST", path: invalidLogin.path, ...reference.invalid },
  ];
  const barePort = await freePort();
  const bare = await startNode(
    "bare node:http",
    [`${root}bench/lib/bare-server.ts`],
    { PORT: String(barePort), BARE_ROUTES: JSON.stringify(routes) },
    `http://127.0.0.1:${barePort}`,
    "/healthz",
  );
  group.add(bare);
  for (const [name, request] of [["healthz", healthz], ["invalid login", invalidLogin]] as const) {
    const mine = await answer(bare.url, request);
    const theirs = name === "healthz" ? reference.healthz : reference.invalid;
    if (JSON.stringify(mine) !== JSON.stringify(theirs)) throw new Error(`bare ${name} differs from persona: ${JSON.stringify(mine)} vs ${JSON.stringify(theirs)}`);
  }

  const expressPort = await freePort();
  const bareExpress = await startNode(
    "bare Express",
    [`${root}bench/lib/bare-express.ts`],
    { PORT: String(expressPort), BARE_ROUTES: JSON.stringify(routes) },
    `http://127.0.0.1:${expressPort}`,
    "/healthz",
  );
  group.add(bareExpress);
  const urls = { persona: persona.url, bare: bare.url, express: bareExpress.url };

  console.log(`node ${process.version} (${process.platform}/${process.arch}), database: embedded PGlite (in memory), worker on`);
  console.log(
    `autocannon: ${load.connections} connections, pipelining ${load.pipelining}, ${load.warmupS} s warm-up + ${load.durationS} s measured per endpoint`,
  );
  console.log(`validated body: ${invalidLogin.body} -> 400 ${reference.invalid.body.length} B ${reference.invalid.contentType}`);

  const results = new Map<Bench, LoadResult>();
  for (const bench of benches) {
    const result = await measure(urls[bench.target], bench.request, load);
    results.set(bench, result);
    process.stderr.write(`  measured ${bench.label}: ${result.requestsPerSecond.toFixed(0)} req/s\n`);
  }

  console.log("");
  const widths = [58, 9, 8, 8, 14, 22];
  console.log(
    [pad("endpoint", widths[0]!), lpad("req/s", widths[1]!), lpad("p50 ms", widths[2]!), lpad("p99 ms", widths[3]!), lpad("non-2xx", widths[4]!), "  statuses"].join(" "),
  );
  let failures = 0;
  for (const bench of benches) {
    const r = results.get(bench)!;
    const expected = bench.expectStatus === 200 ? 0 : r.total;
    const unexpected = Object.entries(r.statusCounts).some(([status]) => Number(status) !== bench.expectStatus) || r.errors > 0 || r.timeouts > 0;
    const ok = !unexpected && r.non2xx === expected;
    if (!ok) failures++;
    console.log(
      [
        pad(bench.label, widths[0]!),
        lpad(r.requestsPerSecond.toFixed(0), widths[1]!),
        lpad(String(r.p50), widths[2]!),
        lpad(String(r.p99), widths[3]!),
        lpad(`${r.non2xx}/${r.total}`, widths[4]!),
        `  ${statuses(r)}${r.errors ? ` errors=${r.errors}` : ""}${r.timeouts ? ` timeouts=${r.timeouts}` : ""} ${ok ? `(all ${bench.expectStatus}, as expected)` : `UNEXPECTED (want all ${bench.expectStatus})`}`,
      ].join(" "),
    );
  }
  const rps = (i: number) => results.get(benches[i]!)!.requestsPerSecond;
  const healthRatio = rps(0) / rps(3);
  const validatedRatio = rps(1) / rps(4);
  console.log("");
  console.log(`ratio healthz / bare healthz             = ${healthRatio.toFixed(2)}`);
  console.log(`ratio validated / bare validated-equiv.  = ${validatedRatio.toFixed(2)}`);
  console.log(`ratio readyz / bare healthz              = ${(rps(2) / rps(3)).toFixed(2)}`);
  console.log(`context: bare Express / bare node:http   = ${(rps(5) / rps(3)).toFixed(2)} (healthz), ${(rps(6) / rps(4)).toFixed(2)} (400)`);
  console.log(`context: persona / bare Express          = ${(rps(0) / rps(5)).toFixed(2)} (healthz), ${(rps(1) / rps(6)).toFixed(2)} (validated)`);
  console.log(`bench:http validated/bare = ${validatedRatio.toFixed(2)} (target >= ${TARGET.toFixed(2)})`);
  if (failures) console.log(`bench:http: ${failures} run(s) answered statuses other than expected`);
  return failures ? 1 : 0;
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
