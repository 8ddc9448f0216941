import { spawn } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root } from "../support/contract.ts";

export const cliPath = join(root, "cli", "persona.ts");

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (throws with both streams in the message when it is not). */
  json: <T = Record<string, unknown>>() => T;
}

/** A fresh config directory (the CLI's login lives there) under a fresh fake HOME. */
export async function tempConfigDir(): Promise<string> {
  const home = await mkdtemp(join(tmpdir(), "persona-cli-"));
  return join(home, "config");
}

/**
 * Runs `persona <args>` as a person would: a child process on the same Node (vitest runs on the
 * project's Node 24), with a clean environment so that nothing of the developer's own setup
 * (a real login, PERSONA_BASE_URL, DATABASE_URL) leaks into the test.
 */
export interface RunCliOptions {
  env?: Record<string, string>;
  input?: string;
  timeoutMs?: number;
  /** An installed `persona` executable to run instead of the repository's, its shebang finding Node on PATH. */
  bin?: string;
  /** Where to run it (default: the repository). */
  cwd?: string;
}

export function runCli(args: string[], options: RunCliOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const [command, commandArgs] = options.bin ? [options.bin, args] : [process.execPath, [cliPath, ...args]];
    const child = spawn(command, commandArgs, {
      cwd: options.cwd ?? root,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: tmpdir(), LOG_LEVEL: "warn", ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`persona ${args.join(" ")} did not finish in time\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, options.timeoutMs ?? 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({
        code,
        stdout,
        stderr,
        json: <T>() => {
          try {
            return JSON.parse(stdout) as T;
          } catch {
            throw new Error(`stdout of persona ${args.join(" ")} is not JSON\nstdout: ${stdout}\nstderr: ${stderr}`);
          }
        },
      });
    });
    child.stdin.end(options.input ?? "");
  });
}
