import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";

export { freePort } from "../../test/support/processes.ts";

export const root = join(import.meta.dirname, "..", "..");
const binDir = join(root, "node_modules", ".bin");

export interface Running {
  name: string;
  url: string;
  child: ChildProcess;
  output: () => string;
  stop: () => Promise<void>;
}

/**
 * Starts a project binary (node_modules/.bin first on PATH, so it runs on the pinned Node) and
 * waits until `probe` answers `readyStatus`.
 */
export async function start(options: {
  name: string;
  bin: string;
  args: string[];
  url: string;
  probe: string;
  readyStatus?: number;
  env?: Record<string, string>;
  timeoutMs?: number;
}): Promise<Running> {
  const child = spawn(join(binDir, options.bin), options.args, {
    cwd: root,
    env: { ...process.env, PATH: `${binDir}:${process.env.PATH}`, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  const keep = (chunk: Buffer) => (log = (log + chunk.toString()).slice(-20_000));
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
  const running: Running = { name: options.name, url: options.url, child, output: () => log, stop };
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${options.name} exited early with ${child.exitCode}:\n${log}`);
    try {
      const response = await fetch(options.probe, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      if (response.status === (options.readyStatus ?? response.status)) return running;
    } catch {
      // not listening yet
    }
    await new Promise((wait) => setTimeout(wait, 200));
  }
  await stop();
  throw new Error(`${options.name} did not get ready on ${options.probe} in time:\n${log}`);
}

/** Runs a project binary to completion with inherited output; resolves its exit code. */
export function run(bin: string, args: string[], env: Record<string, string>): Promise<number> {
  return new Promise((done) => {
    const child = spawn(join(binDir, bin), args, {
      cwd: root,
      env: { ...process.env, PATH: `${binDir}:${process.env.PATH}`, ...env },
      stdio: "inherit",
    });
    child.once("exit", (code, signal) => done(code ?? (signal ? 1 : 0)));
  });
}
