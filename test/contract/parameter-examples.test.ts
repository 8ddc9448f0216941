import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import YAML from "yaml";
import { root } from "../support/contract.ts";

// Contract testers (Dredd among them) build each request from the parameters' examples: every path
// parameter needs one (issue 24, item 8).
describe("parameter examples", () => {
  const doc = YAML.parse(readFileSync(resolve(root, "generated", "openapi.yaml"), "utf8")) as {
    paths: Record<string, Record<string, { operationId?: string; parameters?: { name: string; in: string; example?: unknown }[] }>>;
  };

  it("gives every path parameter of every operation an example", () => {
    const missing: string[] = [];
    let count = 0;
    for (const item of Object.values(doc.paths)) {
      for (const op of Object.values(item)) {
        for (const parameter of op.parameters ?? []) {
          if (parameter.in !== "path") continue;
          count++;
          if (parameter.example === undefined) missing.push(`${op.operationId}: ${parameter.name}`);
        }
      }
    }
    expect(count).toBeGreaterThan(50);
    expect(missing).toEqual([]);
  });
});
