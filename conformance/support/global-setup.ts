import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { formatCoverage, readCoverage } from "./coverage.ts";

// Prints the coverage line once every test file has run. CONFORMANCE_SUMMARY (set by the driver)
// also receives it as JSON so that the driver can repeat it per target and judge it.
export default function setup(project: TestProject): () => void {
  const ledgerDir = mkdtempSync(join(tmpdir(), "persona-conformance-"));
  project.provide("ledgerDir", ledgerDir);
  return () => {
    const coverage = readCoverage(ledgerDir, process.env.CONFORMANCE_TARGET ?? "real");
    rmSync(ledgerDir, { recursive: true, force: true });
    console.log(`\n${formatCoverage(coverage)}\n`);
    if (process.env.CONFORMANCE_SUMMARY) writeFileSync(process.env.CONFORMANCE_SUMMARY, JSON.stringify(coverage));
  };
}
