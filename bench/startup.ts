// `npm run bench:startup`: how long `npm start` (server/main.ts on the embedded default) takes to
// answer /readyz 200 from a fresh data dir (first start: from the template `npm install` made, or
// initdb and migrations without one) and again on the same dir (restart), where the time goes (the
// server's own phase log), its CPU time, and its idle RSS.
// Baseline, measured in the same run: a bare node:http process started the same way, so a loaded
// machine shows as a slower baseline too, and the CPU time at ready, which load hardly moves.
// BENCH_ROUNDS (default 3) rounds; ranges are printed.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./lib/processes.ts";

// BENCH_ROOT: another checkout to measure the same way (an earlier commit, for a before/after).
const root = process.env.BENCH_ROOT ?? fileURLToPath(new URL("..", import.meta.url));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 5_000);
const TARGETS = { firstStartMs: 3_000, restartMs: 1_500, idleRssMb: 350 };
const CLOCK_TICKS = 100; // USER_HZ on Linux

interface Start {
  readyMs: number;
  /** CPU seconds of the process (all its threads) when /readyz first answered 200, in ms. */
  cpuMs: number;
  idleRssMb: number;
  peakRssMb: number;
  phases: Record<string, number>;
  database: Record<string, unknown>;
}

const cpuMsOf = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
};
const statusMb = (pid: number, field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;

/** Spawns `args`, polls `url` until 200, then idles and reads memory; stops it with SIGTERM. */
async function timeStart(args: string[], env: Record<string, string>, url: string, idleMs: number): Promise<Start & { output: string }> {
  const started = performance.now();
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    let readyMs: number | undefined;
    while (readyMs === undefined) {
      if (child.exitCode !== null) throw new Error(`exited early:\n${output}`);
      if (performance.now() - started > 120_000) throw new Error(`not ready in 120 s:\n${output}`);
      try {
        const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
        await response.arrayBuffer();
        if (response.status === 200) readyMs = performance.now() - started;
      } catch {
        // not listening yet
      }
      if (readyMs === undefined) await new Promise((wait) => setTimeout(wait, 10));
    }
    const cpuMs = cpuMsOf(child.pid!);
    await new Promise((wait) => setTimeout(wait, idleMs));
    const lines = output.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as Record<string, unknown>);
    const listening = lines.find((line) => line.msg === "persona is listening");
    const database = lines.find((line) => String(line.msg).startsWith("embedded database")) ?? {};
    return {
      readyMs,
      cpuMs,
      idleRssMb: statusMb(child.pid!, "VmRSS"),
      peakRssMb: statusMb(child.pid!, "VmHWM"),
      phases: (listening?.startup as Record<string, number> | undefined) ?? {},
      database,
      output,
    };
  } finally {
    child.kill("SIGTERM");
    await exited;
  }
}

const bareServer = `require("node:http").createServer((q, s) => s.end("ok")).listen(Number(process.env.PORT), "127.0.0.1")`;

async function round(): Promise<{ bare: Start; first: Start; restart: Start }> {
  const barePort = await freePort();
  const bare = await timeStart(["-e", bareServer], { PORT: String(barePort) }, `http://127.0.0.1:${barePort}/`, 0);
  const dataDir = mkdtempSync(join(tmpdir(), "persona-bench-startup-"));
  try {
    const port = await freePort();
    const env = {
      PERSONA_DATA_DIR: dataDir,
      PORT: String(port),
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      LOG_PRETTY: "false",
      DATABASE_URL: "", // the embedded default, whatever the calling shell has set
      EMBEDDED_DB_IN_MEMORY: "false",
    };
    const readyz = `http://127.0.0.1:${port}/readyz`;
    const first = await timeStart([join(root, "server/main.ts")], env, readyz, IDLE_MS);
    const restart = await timeStart([join(root, "server/main.ts")], env, readyz, IDLE_MS);
    return { bare, first, restart };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const range = (values: number[], digits = 0) => {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  return sorted.length === 1 ? median.toFixed(digits) : `${median.toFixed(digits)} (${sorted[0]!.toFixed(digits)}-${sorted.at(-1)!.toFixed(digits)})`;
};
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  console.log(`node ${process.version} (${process.platform}/${process.arch}); ${ROUNDS} round(s); idle ${IDLE_MS} ms before reading RSS; load average ${(await import("node:os")).loadavg().map((l) => l.toFixed(1)).join(" ")}`);
  const rounds: { bare: Start; first: Start; restart: Start }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    process.stderr.write(`  round ${i + 1}/${ROUNDS}: bare node, first start, restart...\n`);
    rounds.push(await round());
  }
  const of = (kind: "bare" | "first" | "restart", pick: (start: Start) => number) => rounds.map((r) => pick(r[kind]));
  console.log("");
  console.log("median (min-max) over rounds      wall to 200 ms    CPU ms at ready    idle RSS MB    peak RSS MB");
  for (const [label, kind] of [["bare node:http (baseline)", "bare"], ["first start (fresh data dir)", "first"], ["restart (same data dir)", "restart"]] as const) {
    console.log(
      `${label.padEnd(34)}${range(of(kind, (s) => s.readyMs)).padStart(17)}${range(of(kind, (s) => s.cpuMs)).padStart(19)}${kind === "bare" ? "" : range(of(kind, (s) => s.idleRssMb)).padStart(15) + range(of(kind, (s) => s.peakRssMb)).padStart(15)}`,
    );
  }
  for (const kind of ["first", "restart"] as const) {
    const names = [...new Set(rounds.flatMap((r) => Object.keys(r[kind].phases)))];
    console.log("");
    console.log(`${kind === "first" ? "first start" : "restart"}: where the time goes (server's phase log, ms, median (min-max))`);
    for (const name of names) console.log(`  ${name.padEnd(10)} ${range(of(kind, (s) => s.phases[name] ?? 0))}`);
    const database = rounds.map((r) => r[kind].database);
    console.log(
      `  embedded database thread: load PGlite ${range(database.map((d) => Number(d.modulesMs ?? 0)))}, open ${range(database.map((d) => Number(d.openMs ?? 0)))} (initdb: ${database.map((d) => d.initdb).join("/")}; from the install's template: ${database.map((d) => d.fromTemplate ?? false).join("/")})`,
    );
  }
  const bareMs = median(of("bare", (s) => s.readyMs));
  const verdict = (value: number, target: number) => (value <= target ? "met" : "MISSED");
  const first = median(of("first", (s) => s.readyMs));
  const restart = median(of("restart", (s) => s.readyMs));
  const rss = Math.max(...of("first", (s) => s.idleRssMb), ...of("restart", (s) => s.idleRssMb));
  console.log("");
  console.log(`bench:startup first start to /readyz = ${first.toFixed(0)} ms = ${(first / bareMs).toFixed(1)} x bare node start (target <= ${TARGETS.firstStartMs} ms: ${verdict(first, TARGETS.firstStartMs)})`);
  console.log(`bench:startup restart to /readyz = ${restart.toFixed(0)} ms = ${(restart / bareMs).toFixed(1)} x bare node start (target <= ${TARGETS.restartMs} ms: ${verdict(restart, TARGETS.restartMs)})`);
  console.log(`bench:startup idle RSS (largest of all starts) = ${rss.toFixed(0)} MB (target <= ${TARGETS.idleRssMb} MB: ${verdict(rss, TARGETS.idleRssMb)})`);
}

try {
  await main();
} catch (error) {
  console.error(`bench:startup failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}
