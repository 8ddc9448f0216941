import { spawn, type ChildProcess } from "node:child_process";

export { freePort } from "../../test/support/ports.ts";

export interface Child {
  name: string;
  url: string;
  child: ChildProcess;
  output: () => string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with how it ended. */
  stop: (graceMs?: number) => Promise<string>;
}

const running = new Set<ChildProcess>();

/** Last resort when the bench exits without having stopped its children. */
process.on("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/** Spawns `node <args>` in its own process and waits until `readyUrl` answers 200. */
export async function startNode(name: string, args: string[], env: Record<string, string>, url: string, readyPath: string, timeoutMs = 60_000): Promise<Child> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  let log = "";
  child.stdout!.on("data", (chunk: Buffer) => (log += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (log += chunk.toString()));
  const exited = new Promise<string>((done) =>
    child.once("exit", (code, signal) => {
      running.delete(child);
      done(signal ? `signal ${signal}` : `exit code ${code}`);
    }),
  );
  const stop = async (graceMs = 15_000) => {
    if (child.exitCode !== null || child.signalCode !== null) return exited;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    const how = await exited;
    clearTimeout(timer);
    return how;
  };
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited early (${await exited}):\n${log}`);
    try {
      const response = await fetch(url + readyPath, { signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer();
      if (response.ok) return { name, url, child, output: () => log, stop };
    } catch {
      // not listening yet
    }
    await new Promise((wait) => setTimeout(wait, 200));
  }
  await stop();
  throw new Error(`${name} did not answer ${url}${readyPath} within ${timeoutMs} ms:\n${log}`);
}
