import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { operations } from "../../test/support/contract.ts";
import type { LedgerEntry } from "./ledger.ts";

export interface Coverage {
  target: string;
  total: number;
  exercised: string[];
  /** Answered 501 not_implemented and nothing else: the area is not live on the target. */
  notLive: string[];
  /** Neither: a failed test stopped before it, or no test calls it. */
  notReached: string[];
}

export function readCoverage(ledgerDir: string, target: string): Coverage {
  const entries = readdirSync(ledgerDir)
    .filter((name) => name.endsWith(".jsonl"))
    .flatMap((name) => readFileSync(join(ledgerDir, name), "utf8").split("\n").filter(Boolean))
    .map((line) => JSON.parse(line) as LedgerEntry);
  const exercised = new Set(entries.filter((e) => e.outcome === "exercised").map((e) => e.operationId));
  const notLive = new Set(entries.filter((e) => e.outcome === "not-live" && !exercised.has(e.operationId)).map((e) => e.operationId));
  const all = [...operations.keys()];
  return {
    target,
    total: all.length,
    exercised: all.filter((id) => exercised.has(id)),
    notLive: all.filter((id) => notLive.has(id)),
    notReached: all.filter((id) => !exercised.has(id) && !notLive.has(id)),
  };
}

export function formatCoverage(c: Coverage): string {
  const lines = [`conformance (${c.target}): ${c.exercised.length} of ${c.total} operations exercised`];
  if (c.notLive.length) lines.push(`  skipped, not live yet (501 not_implemented), ${c.notLive.length}: ${c.notLive.join(", ")}`);
  if (c.notReached.length) lines.push(`  not reached, ${c.notReached.length}: ${c.notReached.join(", ")}`);
  return lines.join("\n");
}
