// `npm run bench:auth`: what authentication costs. (a) argon2id verifies per second with the
// service's parameters, single-threaded, next to the login endpoint's requests/s; (b) GET /v1/auth/me
// with a session JWT and with an API key, each as a ratio to GET /healthz on the same server in the
// same run. Persona runs in its own child process on the embedded in-memory database.
import { randomBytes, randomUUID } from "node:crypto";
import pg from "pg";
import { hashPassword, verifyPassword } from "../server/areas/auth/passwords.ts";
import { newApiKey, sha256 } from "../server/toolkit/tokens.ts";
import { childGroup } from "./lib/children.ts";
import { expectAll, measure, type LoadOptions, type LoadRequest, type LoadResult } from "./lib/load.ts";
import { startPersona } from "./lib/persona.ts";

const HASH_SECONDS = 5;
const loginLoad: LoadOptions = { connections: 4, durationS: 5, warmupS: 1, pipelining: 1 };
const readLoad: LoadOptions = { connections: 50, durationS: 10, warmupS: 2, pipelining: 1 };
const TARGETS = { jwt: 0.8, apiKey: 0.6 };

const group = childGroup();

async function verifiesPerSecond(): Promise<{ perSecond: number; count: number; msEach: number }> {
  const password = "Correct-horse-9";
  const stored = await hashPassword(password);
  if (!(await verifyPassword(stored, password))) throw new Error("argon2id verify of a fresh hash failed");
  const started = performance.now();
  let count = 0;
  // One verify at a time: the cost of one login's password check on one core.
  while (performance.now() - started < HASH_SECONDS * 1000) {
    await verifyPassword(stored, password);
    count++;
  }
  const elapsed = (performance.now() - started) / 1000;
  return { perSecond: count / elapsed, count, msEach: (elapsed * 1000) / count };
}

async function call(url: string, path: string, init: RequestInit = {}): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url + path, init);
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON; keep the text for the error message
  }
  return { status: response.status, body };
}

/** An API key through the API when the key endpoint is live, else written to the database like test/support/users.ts. */
async function apiKeyFor(url: string, accessToken: string, userId: string, databaseUrl: string): Promise<{ key: string; how: string }> {
  const created = await call(url, "/v1/auth/api-keys", {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${accessToken}` },
    body: JSON.stringify({ name: "bench key", scopes: ["admin"] }),
  });
  const key = (created.body as { key?: unknown }).key;
  if (created.status === 201 && typeof key === "string") return { key, how: "POST /v1/auth/api-keys (201)" };
  const { key: inserted, hint } = newApiKey();
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(
      "INSERT INTO api_keys (id, user_id, name, key_hash, key_hint, scopes, created_at) VALUES ($1, $2, $3, $4, $5, $6, now())",
      [randomUUID(), userId, "bench key", sha256(inserted), hint, ["admin"]],
    );
  } finally {
    await client.end();
  }
  return { key: inserted, how: `inserted into api_keys (POST /v1/auth/api-keys answered ${created.status})` };
}

const row = (label: string, r: LoadResult) =>
  `${label.padEnd(44)} ${r.requestsPerSecond.toFixed(0).padStart(8)} req/s   p50 ${String(r.p50).padStart(4)} ms   p99 ${String(r.p99).padStart(4)} ms   (${r.total} requests)`;

async function main(): Promise<number> {
  console.log(`node ${process.version} (${process.platform}/${process.arch}), UV_THREADPOOL_SIZE=${process.env.UV_THREADPOOL_SIZE ?? "4 (default)"}`);
  process.stderr.write(`  argon2id verify, ${HASH_SECONDS} s single-threaded...\n`);
  const hashes = await verifiesPerSecond();

  const persona = await startPersona();
  group.add(persona.child);
  const url = persona.url;

  const suffix = randomBytes(4).toString("hex");
  const credentials = { email: `bench_${suffix}@example.com`, username: `bench_${suffix}`, password: "Correct-horse-9" };
  const registered = await call(url, "/v1/auth/register", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(credentials),
  });
  if (registered.status !== 201) throw new Error(`register answered ${registered.status}: ${JSON.stringify(registered.body)}`);
  const { access_token: accessToken, user } = registered.body as { access_token: string; user: { id: string } };
  const apiKey = await apiKeyFor(url, accessToken, user.id, persona.databaseUrl);

  const requests: Record<"login" | "healthz" | "meJwt" | "meKey", LoadRequest> = {
    login: {
      method: "POST",
      path: "/v1/auth/login",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: credentials.email, password: credentials.password }),
    },
    healthz: { method: "GET", path: "/healthz" },
    meJwt: { method: "GET", path: "/v1/auth/me", headers: { authorization: `Bearer ${accessToken}` } },
    meKey: { method: "GET", path: "/v1/auth/me", headers: { "x-api-key": apiKey.key } },
  };
  for (const name of ["login", "meJwt", "meKey"] as const) {
    const { method, path, headers, body } = requests[name];
    const answer = await call(url, path, { method, headers, body });
    if (answer.status !== 200) throw new Error(`${name} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  }

  const results = {} as Record<keyof typeof requests, LoadResult>;
  for (const [name, options] of [["login", loginLoad], ["healthz", readLoad], ["meJwt", readLoad], ["meKey", readLoad]] as const) {
    results[name] = await measure(url, requests[name], options);
    process.stderr.write(`  measured ${name}: ${results[name].requestsPerSecond.toFixed(0)} req/s\n`);
  }
  const problems = [
    expectAll("login", results.login, 200),
    expectAll("healthz", results.healthz, 200),
    expectAll("me(jwt)", results.meJwt, 200),
    expectAll("me(api-key)", results.meKey, 200),
  ].filter(Boolean);

  console.log(`api key: ${apiKey.how}`);
  console.log("");
  console.log(`argon2id verify (m=19 MiB, t=2, p=1), one at a time: ${hashes.perSecond.toFixed(1)}/s (${hashes.msEach.toFixed(1)} ms each, ${hashes.count} in ${HASH_SECONDS} s)`);
  console.log(row(`POST /v1/auth/login, ${loginLoad.connections} connections`, results.login));
  console.log(
    `login req/s / single-threaded verifies/s = ${(results.login.requestsPerSecond / hashes.perSecond).toFixed(2)} (the service verifies on libuv's thread pool; at most its size)`,
  );
  console.log("");
  console.log(`${readLoad.connections} connections, ${readLoad.warmupS} s warm-up + ${readLoad.durationS} s measured:`);
  console.log(row("GET /healthz", results.healthz));
  console.log(row("GET /v1/auth/me (session JWT)", results.meJwt));
  console.log(row("GET /v1/auth/me (API key)", results.meKey));
  const jwtRatio = results.meJwt.requestsPerSecond / results.healthz.requestsPerSecond;
  const keyRatio = results.meKey.requestsPerSecond / results.healthz.requestsPerSecond;
  console.log("");
  console.log(`bench:auth me(jwt)/healthz = ${jwtRatio.toFixed(2)} (target >= ${TARGETS.jwt.toFixed(2)}: ${jwtRatio >= TARGETS.jwt ? "met" : "MISSED"})`);
  console.log(`bench:auth me(api-key)/healthz = ${keyRatio.toFixed(2)} (target >= ${TARGETS.apiKey.toFixed(2)}: ${keyRatio >= TARGETS.apiKey ? "met" : "MISSED"})`);
  for (const problem of problems) console.log(`bench:auth: ${problem}`);
  return problems.length ? 1 : 0;
}

let code = 1;
try {
  code = await main();
} catch (error) {
  console.error(`bench:auth failed: ${error instanceof Error ? error.message : String(error)}`);
  group.dump();
} finally {
  await group.stopAll();
}
process.exitCode = code;
