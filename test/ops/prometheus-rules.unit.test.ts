import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { root } from "../support/contract.ts";

// deploy/prometheus/persona-rules.yml, the example alerts of the README's Monitoring section: every
// rule well formed, and every metric it names one the server exports (a renamed metric must not
// leave an alert that silently never fires). promtool checks the PromQL itself where it is
// installed (prometheus-rules.e2e.test.ts).

interface Rule {
  alert?: string;
  expr?: unknown;
  for?: unknown;
  labels?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}
const rules = parse(readFileSync(join(root, "deploy/prometheus/persona-rules.yml"), "utf8")) as { groups: { name: string; rules: Rule[] }[] };

/** The metric names the server declares (`name: "persona_…"` in its metrics modules) and prom-client's default ones it uses. */
function exported(): Set<string> {
  const dir = join(root, "server/toolkit/metrics");
  const names = readdirSync(dir)
    .filter((file) => file.endsWith(".ts"))
    .flatMap((file) => [...readFileSync(join(dir, file), "utf8").matchAll(/name: "(persona_\w+)"/g)].map((match) => match[1]!));
  return new Set([...names, "nodejs_eventloop_lag_p99_seconds", "process_resident_memory_bytes", "nodejs_gc_duration_seconds"]);
}

describe("deploy/prometheus/persona-rules.yml", () => {
  const all = rules.groups.flatMap((group) => group.rules);

  it("has named groups of alerts, each with an expression, a severity, a summary and a description", () => {
    expect(rules.groups.length).toBeGreaterThan(0);
    for (const group of rules.groups) {
      expect(group.name).toMatch(/^persona-/);
      expect(group.rules.length).toBeGreaterThan(0);
    }
    for (const rule of all) {
      expect(rule.alert).toMatch(/^Persona[A-Z]\w+$/);
      expect(typeof rule.expr).toBe("string");
      expect(["critical", "warning"]).toContain(rule.labels?.severity);
      expect(typeof rule.annotations?.summary).toBe("string");
      expect(typeof rule.annotations?.description).toBe("string");
      if (rule.for !== undefined) expect(rule.for).toMatch(/^\d+[smh]$/);
    }
    expect(new Set(all.map((rule) => rule.alert)).size).toBe(all.length);
  });

  it("alerts on the obvious failures: no worker progress, queue age, 5xx, model errors, stuck generations", () => {
    expect(all.map((rule) => rule.alert)).toEqual(expect.arrayContaining(["PersonaNoWorkerProgress", "PersonaJobQueueAge", "PersonaHigh5xx", "PersonaModelErrors", "PersonaStuckGeneration"]));
  });

  it("names only metrics the server exports", () => {
    const known = exported();
    const named = all.flatMap((rule) => [...String(rule.expr).matchAll(/\b((?:persona|nodejs|process)_\w+?)(?:_bucket|_count|_sum)?\b(?=[{[\s)]|$)/g)].map((match) => match[1]!));
    expect(named.length).toBeGreaterThan(all.length);
    expect(named.filter((name) => !known.has(name))).toEqual([]);
  });
});
