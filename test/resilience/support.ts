import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { root } from "../support/contract.ts";
import { freePort } from "../support/ports.ts";
import { createTestDatabase, databaseKind, databaseSettings, jsonHeaders, type TestDatabase } from "../support/service.ts";

// Crash tests run the service as real processes (`persona serve`, `persona worker`) so that a
// SIGKILL is a real one: no finally block, no graceful shutdown, no flushed buffers.

export { sleep, until } from "../support/wait.ts";
import { sleep } from "../support/wait.ts";

export interface Proc {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<void>;
  kill9: () => Promise<void>;
  stop: () => Promise<void>;
}

/** Where the processes keep their data: a fresh PostgreSQL database, or an embedded data dir on disk. */
export interface Store {
  env: Record<string, string>;
  database?: TestDatabase;
  dir?: string;
  drop: () => Promise<void>;
}

export async function freshStore(): Promise<Store> {
  if (databaseKind === "postgres") {
    const database = await createTestDatabase();
    return { env: databaseSettings(database.url!), database, drop: database.drop };
  }
  const dir = mkdtempSync(join(tmpdir(), "persona-crash-"));
  return { env: { DATABASE_URL: "", PERSONA_DATA_DIR: dir, EMBEDDED_DB_IN_MEMORY: "false" }, dir, drop: async () => rmSync(dir, { recursive: true, force: true }) };
}

/** `persona <args>` with the pinned Node; resolves once `probe` (default /healthz) answers 200. */
export async function startPersona(args: string[], env: Record<string, string>, options: { port?: number; probe?: string | false } = {}): Promise<Proc> {
  const port = options.port ?? (await freePort());
  const child = spawn(process.execPath, ["cli/persona.ts", ...args], {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(port),
      LOG_LEVEL: "warn",
      LOG_PRETTY: "false",
      WORKER_POLL_INTERVAL_MS: "100",
      AUTH_ATTEMPTS_PER_IP: "100000",
      AUTH_ATTEMPTS_PER_EMAIL: "100000",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  const keep = (chunk: Buffer) => (log = (log + chunk.toString()).slice(-100_000));
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const url = `http://127.0.0.1:${port}`;
  const proc: Proc = {
    child,
    url,
    output: () => log,
    exited,
    kill9: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const forced = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(forced);
    },
  };
  if (options.probe === false) return proc;
  const probe = `${url}${options.probe ?? "/healthz"}`;
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`persona ${args.join(" ")} exited early with ${child.exitCode}:\n${log}`);
    const ok = await fetch(probe, { signal: AbortSignal.timeout(2_000) }).then((r) => r.status === 200, () => false);
    if (ok) return proc;
    await sleep(200);
  }
  await proc.kill9();
  throw new Error(`persona ${args.join(" ")} did not get ready:\n${log}`);
}

/** A user registered through the API, as bearer headers. */
export async function register(url: string): Promise<{ id: string; auth: Record<string, string> }> {
  const suffix = Math.random().toString(16).slice(2, 10);
  const response = await fetch(`${url}/v1/auth/register`, {
    method: "POST",
    headers: jsonHeaders,
    body: JSON.stringify({ email: `crash_${suffix}@example.com`, username: `crash_${suffix}`, password: "Correct-horse-9" }),
  });
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(201);
  return { id: body.user.id, auth: { authorization: `Bearer ${body.access_token}` } };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the crash tests read a few fields of many shapes
type Json = any;

export async function call(url: string, auth: Record<string, string>, method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { ...jsonHeaders, ...auth },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text && response.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text };
}

