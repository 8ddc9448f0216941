import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { root } from "./contract.ts";

/** A free loopback port, found by letting the OS pick one. */
export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolvePort(address.port) : reject(new Error("no port"))));
    });
  });
}

export interface RunningProcess {
  url: string;
  child: ChildProcess;
  output: () => string;
  stop: () => Promise<void>;
}

/** Starts a project binary from node_modules/.bin and waits until `url` answers any HTTP status. */
export async function startAndWait(bin: string, args: string[], url: string, timeoutMs = 60_000, env: Record<string, string> = {}): Promise<RunningProcess> {
  const binDir = join(root, "node_modules", ".bin");
  const child = spawn(join(binDir, bin), args, {
    cwd: root,
    env: { ...process.env, PATH: `${binDir}:${process.env.PATH}`, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout!.on("data", (chunk: Buffer) => (log += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (log += chunk.toString()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((done) => child.once("exit", () => done()));
    child.kill("SIGTERM");
    await exited;
  };
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${bin} exited early with ${child.exitCode}:\n${log}`);
    try {
      await fetch(url, { signal: AbortSignal.timeout(1000) });
      return { url, child, output: () => log, stop };
    } catch {
      await new Promise((wait) => setTimeout(wait, 250));
    }
  }
  await stop();
  throw new Error(`${bin} did not answer on ${url} within ${timeoutMs} ms:\n${log}`);
}
