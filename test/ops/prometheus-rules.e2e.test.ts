import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { root } from "../support/contract.ts";

// The example alerts and configuration checked by Prometheus's own promtool (`apt install
// prometheus`, or the release tarball): the PromQL parses, and the rules' unit tests
// (persona-rules.test.yml) fire each tested alert when it should and not before. Skipped where
// promtool is not installed; prometheus-rules.unit.test.ts checks the file's shape everywhere.

const run = promisify(execFile);
const dir = join(root, "deploy/prometheus");
const promtool = await run("promtool", ["--version"]).then(() => true, () => false);

describe.skipIf(!promtool)("deploy/prometheus with promtool", () => {
  it("checks the rules", async () => {
    const { stdout } = await run("promtool", ["check", "rules", "persona-rules.yml"], { cwd: dir });
    expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
  });

  it("passes the rules' unit tests", async () => {
    const { stdout } = await run("promtool", ["test", "rules", "persona-rules.test.yml"], { cwd: dir });
    expect(stdout).toContain("SUCCESS");
  });

  it("checks the example configuration", async () => {
    const { stdout } = await run("promtool", ["check", "config", "prometheus.example.yml"], { cwd: dir });
    expect(stdout).toContain("is valid prometheus config file syntax");
  });
});
