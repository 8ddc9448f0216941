import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StatementCounts } from "./statement-counter.ts";

export type { StatementCounts };

/**
 * The database statements a Persona child has sent so far, through the counter preloaded into it
 * (statement-counter.ts): `nodeArgs` and `env` start the child with it; `read(pid)` asks the child
 * for its counts (SIGUSR2) and waits for the file it writes.
 */
export function statementProbe(): { nodeArgs: string[]; env: Record<string, string>; read: (pid: number) => Promise<StatementCounts> } {
  // BENCH_STATEMENTS_TEXT: also count statements by their text, to name them in the output.
  const file = join(mkdtempSync(join(tmpdir(), "persona-bench-statements-")), "counts.json");
  let last = 0;
  return {
    nodeArgs: ["--import", new URL("./statement-counter.ts", import.meta.url).pathname],
    env: { BENCH_STATEMENTS_FILE: file, ...(process.env.BENCH_STATEMENTS_TEXT ? { BENCH_STATEMENTS_TEXT: "1" } : {}) },
    read: async (pid) => {
      process.kill(pid, "SIGUSR2");
      for (let i = 0; i < 200; i++) {
        const written = modified(file);
        if (written > last) {
          last = written;
          return JSON.parse(readFileSync(file, "utf8")) as StatementCounts;
        }
        await new Promise((wait) => setTimeout(wait, 10));
      }
      throw new Error("the Persona child did not report its statement counts");
    },
  };
}

function modified(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

/** `after - before`, field by field. */
export function countsBetween(before: StatementCounts, after: StatementCounts): StatementCounts {
  const byKind: Record<string, number> = {};
  for (const kind of new Set([...Object.keys(before.byKind), ...Object.keys(after.byKind)])) byKind[kind] = (after.byKind[kind] ?? 0) - (before.byKind[kind] ?? 0);
  const byText = after.byText && Object.fromEntries(Object.entries(after.byText).map(([text, n]) => [text, n - (before.byText?.[text] ?? 0)]).filter(([, n]) => n !== 0));
  return { roundTrips: after.roundTrips - before.roundTrips, statements: after.statements - before.statements, transactions: after.transactions - before.transactions, byKind, ...(byText ? { byText } : {}) };
}

/**
 * User + system CPU ms of every PostgreSQL server process on this machine (`comm` is postgres), or,
 * with BENCH_PGDATA (the server's data directory), only that server's: its postmaster and the
 * processes it started, so another cluster on the machine does not count.
 */
export function postgresCpuMs(): number {
  const postmaster = postmasterPid();
  let total = 0;
  for (const entry of readdirSafe("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (!stat.includes("(postgres)")) continue;
      const fields = stat.replace(/^.*\) /, "").split(" ");
      if (postmaster !== undefined && Number(entry) !== postmaster && Number(fields[1]) !== postmaster) continue;
      total += ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
    } catch {
      // ended meanwhile
    }
  }
  return total;
}

function postmasterPid(): number | undefined {
  const dir = process.env.BENCH_PGDATA;
  return dir ? Number(readFileSync(`${dir}/postmaster.pid`, "utf8").split("\n")[0]) : undefined;
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
