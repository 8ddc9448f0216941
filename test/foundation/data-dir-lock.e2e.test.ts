import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../cli/run-cli.ts";
import { root } from "../support/contract.ts";
import { startAndWait, type RunningProcess } from "../support/processes.ts";
import { freePort } from "../support/ports.ts";

// One process per embedded data dir (issue 24 item 9, issue 13 item 1): a second server fails at
// once naming the holder, admin commands attach to the running server, and a lock left by kill -9
// is taken over with nothing lost. Only the embedded default has a data dir.
const SLOW = 180_000;
const running: RunningProcess[] = [];

afterAll(async () => {
  await Promise.all(running.map((p) => p.stop()));
});

async function startServer(dataDir: string): Promise<RunningProcess> {
  const port = await freePort();
  const server = await startAndWait("node", ["server/main.ts"], `http://127.0.0.1:${port}/readyz`, 90_000, {
    PORT: String(port),
    PERSONA_DATA_DIR: dataDir,
    LOG_LEVEL: "warn",
  });
  running.push(server);
  // It answers 503 while it starts: wait for ready.
  const ready = () => fetch(server.url).then((response) => response.status === 200, () => false);
  for (let tries = 0; !(await ready()); tries++) {
    if (tries > 600) throw new Error(`not ready:\n${server.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return server;
}

/** Runs a second `npm start` on the same dir to its exit. */
function startExpectingExit(dataDir: string, port: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["server/main.ts"], {
      cwd: root,
      env: { ...process.env, PORT: String(port), PERSONA_DATA_DIR: dataDir, LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("exit", (code) => resolve({ code, output }));
  });
}

const authorize = (server: RunningProcess, clientId: string, redirect: string) =>
  fetch(`${server.url.replace("/readyz", "")}/v1/oauth/authorize?response_type=code&client_id=${clientId}&redirect_uri=${encodeURIComponent(redirect)}&scope=personas%3Aread&state=s`);

describe.skipIf(Boolean(process.env.TEST_DATABASE_URL))("the embedded data dir lock", { timeout: SLOW }, () => {
  it("refuses a second server, lets the CLI attach, and recovers after kill -9 with nothing lost", async () => {
    const dataDir = join(await mkdtemp(join(tmpdir(), "persona-lock-")), "data");
    const first = await startServer(dataDir);
    const lock = JSON.parse(readFileSync(`${dataDir}/db.lock`, "utf8")) as { pid: number; socket: string };
    expect(lock.pid).toBe(first.child.pid);
    expect(lock.socket).toBe(`${dataDir}/db.socket`);

    const second = await startExpectingExit(dataDir, await freePort());
    expect(second.code).toBe(1);
    expect(second.output).toContain(`in use by process ${first.child.pid}`);
    // How to share: the first server's database, through its socket (issue 31 H4: no port).
    expect(second.output).toContain(`DATABASE_URL=postgres:///postgres?host=${dataDir}/db.socket&port=5432&user=postgres&sslmode=disable`);

    // An admin registers an OAuth client while the server runs; the server sees it at once.
    const redirect = "http://127.0.0.1:8765/cb";
    const registered = await runCli(["oauth-clients", "register", "--name", "Lock app", "--redirect-uri", redirect, "--json"], {
      env: { PERSONA_DATA_DIR: dataDir },
    });
    expect(registered.code, registered.stderr).toBe(0);
    const clientId = registered.json<{ client_id: string }>().client_id;
    expect((await authorize(first, clientId, redirect)).status).toBe(200);
    const mail = await runCli(["mail", "--json"], { env: { PERSONA_DATA_DIR: dataDir } });
    expect(mail.code, mail.stderr).toBe(0);

    // kill -9 leaves the lock behind; the next start takes it over.
    const killed = new Promise((done) => first.child.once("exit", done));
    first.child.kill("SIGKILL");
    await killed;
    expect(existsSync(`${dataDir}/db.lock`)).toBe(true);
    const restarted = await startServer(dataDir);
    expect((await authorize(restarted, clientId, redirect)).status).toBe(200);
    await restarted.stop();
    expect(existsSync(`${dataDir}/db.lock`)).toBe(false);

    // With no server running, the CLI opens the dir itself (and takes the lock while it does).
    const listed = await runCli(["oauth-clients", "list", "--json"], { env: { PERSONA_DATA_DIR: dataDir } });
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.stringify(listed.json())).toContain(clientId);
    expect(existsSync(`${dataDir}/db.lock`)).toBe(false);
  });

  it("reports a port in use before opening the database (issue 13, item 2)", async () => {
    const dataDir = join(await mkdtemp(join(tmpdir(), "persona-lock-")), "data");
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const { port } = blocker.address() as AddressInfo;
    try {
      const result = await startExpectingExit(dataDir, port);
      expect(result.code).toBe(1);
      expect(result.output).toContain(`Cannot listen on 127.0.0.1:${port} (EADDRINUSE)`);
      // Nothing of the database was opened or created.
      expect(existsSync(join(dataDir, "db"))).toBe(false);
      expect(existsSync(`${dataDir}/db.lock`)).toBe(false);
    } finally {
      blocker.close();
    }
  });

  it("takes over a lock whose process is gone", async () => {
    const dataDir = join(await mkdtemp(join(tmpdir(), "persona-lock-")), "data");
    mkdirSync(dataDir, { recursive: true });
    // A PID far above any pid_max names no process.
    writeFileSync(`${dataDir}/db.lock`, JSON.stringify({ pid: 2 ** 30, socket: `${dataDir}/db.socket`, since: "2026-01-01T00:00:00Z" }));
    const server = await startServer(dataDir);
    expect((await fetch(server.url)).status).toBe(200);
  });
});
