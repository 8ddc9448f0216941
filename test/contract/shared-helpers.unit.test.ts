import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { root } from "../support/contract.ts";

// The conformance suite and the tests share one contract loader, schema check, SSE parser and
// process starter, in test/support (issue 13, item 21): conformance/ keeps none of its own.
const OWN_COPIES: [string, RegExp][] = [
  ["a contract loader", /from "yaml"|YAML\.parse/],
  ["a schema validator", /from "ajv"|new Ajv/],
  ["an SSE parser", /from "eventsource-parser"|function parseSse/],
  ["a process starter", /from "node:child_process"/],
];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

describe("the conformance suite", () => {
  it("uses test/support's helpers instead of copies of its own", () => {
    const files = sources(join(root, "conformance"));
    expect(files.length).toBeGreaterThan(10);
    const copies = files.flatMap((file) => {
      const text = readFileSync(file, "utf8");
      return OWN_COPIES.filter(([, pattern]) => pattern.test(text)).map(([what]) => `${relative(root, file)}: ${what}`);
    });
    expect(copies).toEqual([]);
  });
});
