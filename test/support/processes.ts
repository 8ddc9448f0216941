import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { root } from "./contract.ts";

// Child processes of the tests and of the conformance driver: project binaries from
// node_modules/.bin, put first on PATH so that their `env node` shebangs run the pinned Node.

const binDir = join(root, "node_modules", ".bin");
const projectEnv = (env: Record<string, string> = {}) => ({ ...process.env, PATH: `${binDir}:${process.env.PATH}`, ...env });


export interface RunningProcess {
  name: string;
  url: string;
  child: ChildProcess;
  /** The last 100 kB of its stdout and stderr, interleaved. */
  output: () => string;
  /** SIGTERM, then SIGKILL if it has not exited 10 s later. */
  stop: () => Promise<void>;
}

export interface StartOptions {
  bin: string;
  args: string[];
  /** What the caller calls the process by (messages); the binary's name unless told. */
  name?: string;
  /** Where it serves; also the readiness probe unless `probe` is given. */
  url: string;
  probe?: string;
  /** The status the probe must answer; any HTTP answer counts when unset. */
  readyStatus?: number;
  env?: Record<string, string>;
  timeoutMs?: number;
}

/** Starts a project binary and waits until its probe answers (`readyStatus`, or anything). */
export async function startProcess(options: StartOptions): Promise<RunningProcess> {
  const name = options.name ?? options.bin;
  const child = spawn(join(binDir, options.bin), options.args, { cwd: root, env: projectEnv(options.env), stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  const keep = (chunk: Buffer) => (log = (log + chunk.toString()).slice(-100_000));
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const forced = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(forced);
  };
  const running: RunningProcess = { name, url: options.url, child, output: () => log, stop };
  const probe = options.probe ?? options.url;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited early with ${child.exitCode}:\n${log}`);
    try {
      const response = await fetch(probe, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      if (options.readyStatus === undefined || response.status === options.readyStatus) return running;
    } catch {
      // not listening yet
    }
    await new Promise((wait) => setTimeout(wait, 200));
  }
  await stop();
  throw new Error(`${name} did not get ready on ${probe} within ${timeoutMs} ms:\n${log}`);
}

/**
 * Starts a project binary and waits until `url` answers 200: the server binds its port before it
 * has started and answers 503 "starting" until then, so any answer is not enough.
 */
export function startAndWait(bin: string, args: string[], url: string, timeoutMs = 60_000, env: Record<string, string> = {}): Promise<RunningProcess> {
  return startProcess({ bin, args, url, timeoutMs, env, readyStatus: 200 });
}

/** Runs a project binary to completion with inherited output; resolves its exit code. */
export function runToEnd(bin: string, args: string[], env: Record<string, string> = {}): Promise<number> {
  return new Promise((done) => {
    const child = spawn(join(binDir, bin), args, { cwd: root, env: projectEnv(env), stdio: "inherit" });
    child.once("exit", (code, signal) => done(code ?? (signal ? 1 : 0)));
  });
}

/** npm's own script (npm-cli.js), so that a test can run npm on a Node of its choosing. */
export function npmCliPath(): string {
  for (const dir of (process.env.PATH ?? "").split(":")) {
    const candidate = join(dir, "npm");
    if (dir && existsSync(candidate)) return realpathSync(candidate);
  }
  throw new Error("npm is not on PATH");
}
