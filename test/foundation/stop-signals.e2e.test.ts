import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { root } from "../support/contract.ts";
import { freePort } from "../support/ports.ts";
import { npmCliPath } from "../support/processes.ts";
import { until } from "../support/wait.ts";

// SIGTERM to what the README tells people to run stops the server (issue 39 item 3): `npm start`
// (npm forwards the signal to its child, which the start script makes the server itself), the
// direct `node server/main.ts`, and that same command as PID 1 of its own PID namespace, as in a
// container. Each run drains and exits, and releases the data dir: the next start on it succeeds.
// Embedded default only: the lock is the embedded data dir's.
const SLOW = 300_000;

interface Started {
  child: ChildProcess;
  url: string;
  dataDir: string;
  output: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

/** Starts `command args` with the server's environment on `dataDir`, in a process group of its own (as a terminal's job is). */
async function start(command: string, args: string[], dataDir: string): Promise<Started> {
  const port = await freePort();
  const child = spawn(command, args, {
    cwd: root,
    detached: true,
    env: { ...process.env, PORT: String(port), PERSONA_DATA_DIR: dataDir, DATABASE_URL: "", LOG_LEVEL: "info", LOG_PRETTY: "false" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let log = "";
  child.stdout!.on("data", (chunk: Buffer) => (log += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (log += chunk.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.once("exit", (code, signal) => done({ code, signal })));
  const url = `http://127.0.0.1:${port}`;
  await until(
    `${[command, ...args].join(" ")} ready\n${log}`,
    () => child.exitCode === null && fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) }).then((response) => response.status === 200),
    120_000,
  );
  return { child, url, dataDir, output: () => log, exit };
}

const npmStart = (dataDir: string) => start(process.execPath, [npmCliPath(), "start"], dataDir);
const direct = (dataDir: string) => start(process.execPath, ["server/main.ts"], dataDir);

const freshDataDir = async () => join(await mkdtemp(join(tmpdir(), "persona-signals-")), "data");
const lockFile = (dataDir: string) => `${dataDir}/db.lock`;
const holderPid = (dataDir: string) => (JSON.parse(readFileSync(lockFile(dataDir), "utf8")) as { pid: number }).pid;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The PIDs of `pid`'s children (Linux /proc). */
function childrenOf(pid: number): number[] {
  const text = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim();
  return text ? text.split(" ").map(Number) : [];
}

/** Awaits the exit of the process the test signalled; one still running after a minute is killed, which its exit then shows. */
async function exitOf(started: Started) {
  const guard = setTimeout(() => started.child.kill("SIGKILL"), 60_000);
  const result = await started.exit;
  clearTimeout(guard);
  return result;
}

/** The data dir is free again: no lock file, and a new server starts on it and stops. */
async function expectReleased(dataDir: string) {
  expect(existsSync(lockFile(dataDir))).toBe(false);
  const next = await direct(dataDir);
  process.kill(next.child.pid!, "SIGTERM");
  expect(await exitOf(next), next.output()).toEqual({ code: 0, signal: null });
}

/** Whether this machine lets the tests make a PID namespace (root, or unprivileged user namespaces). */
const UNSHARE = (() => {
  for (const args of [["--pid", "--fork"], ["--user", "--map-root-user", "--pid", "--fork"]]) {
    if (spawnSync("unshare", [...args, "true"], { stdio: "ignore" }).status === 0) return args;
  }
  return undefined;
})();

describe.skipIf(Boolean(process.env.TEST_DATABASE_URL))("stopping the server with a signal", { timeout: SLOW }, () => {
  it("SIGTERM to `npm start` (npm's PID) drains the server and exits the whole tree", async () => {
    const dataDir = await freshDataDir();
    const started = await npmStart(dataDir);
    const server = holderPid(dataDir);
    // The start script execs: npm's child is the server itself, with no shell between them.
    expect(childrenOf(started.child.pid!)).toEqual([server]);

    process.kill(started.child.pid!, "SIGTERM");
    expect(await exitOf(started), started.output()).toEqual({ code: 0, signal: null });
    expect(isAlive(server)).toBe(false);
    expect(started.output()).toContain('"signal":"SIGTERM"');
    expect(started.output()).toContain('"msg":"shut down"');
    await expectReleased(dataDir);
  });

  it("Ctrl-C on `npm start` (SIGINT to its process group, echoed by npm) drains once and exits 0", async () => {
    const dataDir = await freshDataDir();
    const started = await npmStart(dataDir);
    const server = holderPid(dataDir);
    process.kill(-started.child.pid!, "SIGINT");
    expect(await exitOf(started), started.output()).toEqual({ code: 0, signal: null });
    expect(isAlive(server)).toBe(false);
    // npm's forwarded copy of the same keypress is not taken for an operator insisting.
    expect(started.output()).toContain('"msg":"shut down"');
    expect(started.output()).not.toContain("second signal");
    await expectReleased(dataDir);
  });

  it("SIGTERM to `node server/main.ts` drains and exits 0", async () => {
    const dataDir = await freshDataDir();
    const started = await direct(dataDir);
    process.kill(started.child.pid!, "SIGTERM");
    expect(await exitOf(started), started.output()).toEqual({ code: 0, signal: null });
    expect(started.output()).toContain('"msg":"shut down"');
    await expectReleased(dataDir);
  });

  it.skipIf(!UNSHARE)("as PID 1 of its own PID namespace (a container), SIGTERM drains and exits; after a kill -9 it starts again", async () => {
    const dataDir = await freshDataDir();
    // unshare forks the server as PID 1 of the new namespace and waits for it; signals go to the server itself.
    const asInit = () => start("unshare", [...UNSHARE!, "--kill-child", process.execPath, "server/main.ts"], dataDir);
    const started = await asInit();
    expect(holderPid(dataDir)).toBe(1);
    const [server] = childrenOf(started.child.pid!);
    // A signal from outside the namespace reaches its init only if init handles it.
    process.kill(server!, "SIGTERM");
    expect(await exitOf(started), started.output()).toEqual({ code: 0, signal: null });
    expect(started.output()).toContain('"msg":"shut down"');
    expect(existsSync(lockFile(dataDir))).toBe(false);

    // Killed outright, it leaves its lock naming PID 1, which the next PID 1 on the same dir takes over.
    const again = await asInit();
    process.kill(childrenOf(again.child.pid!)[0]!, "SIGKILL");
    await exitOf(again);
    expect(holderPid(dataDir)).toBe(1);
    const third = await asInit();
    process.kill(childrenOf(third.child.pid!)[0]!, "SIGTERM");
    expect(await exitOf(third), third.output()).toEqual({ code: 0, signal: null });
  });
});
