import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { inject } from "vitest";

// Test files run in separate workers; each appends what it saw to its own file in the directory the
// global setup provides, and the global teardown adds them up.
declare module "vitest" {
  export interface ProvidedContext {
    ledgerDir: string;
  }
}

export type Outcome = "exercised" | "not-live";

export interface LedgerEntry {
  operationId: string;
  status: number;
  outcome: Outcome;
}

export function record(entry: LedgerEntry): void {
  appendFileSync(join(inject("ledgerDir"), `${process.pid}.jsonl`), `${JSON.stringify(entry)}\n`);
}
