import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { cruise, type IConfiguration } from "dependency-cruiser";
import { afterAll, describe, expect, it } from "vitest";

// The layout's import rules (docs/architecture.md, .dependency-cruiser.mjs) each fail on a tree
// that breaks them: `npm run check` passing on the real tree then means something.
const config = ((await import(new URL("../../.dependency-cruiser.mjs", import.meta.url).href)) as { default: IConfiguration }).default;
const made: string[] = [];
afterAll(() => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

async function violations(files: Record<string, string>): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), "persona-import-rules-"));
  made.push(dir);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  const result = await cruise(["server"], {
    baseDir: dir,
    ruleSet: { forbidden: config.forbidden ?? [] },
    validate: true,
    metrics: true,
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { extensions: [".ts"] },
  });
  if (typeof result.output === "string") throw new Error("expected a cruise result");
  return result.output.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`);
}

const area = (name: string, body = "export const value = 1;") => ({ [`server/areas/${name}/index.ts`]: body });

describe("the import rules", () => {
  it("pass a tree that keeps them", async () => {
    expect(
      await violations({
        ...area("a", 'export { inner } from "./inner.ts";'),
        "server/areas/a/inner.ts": 'import { value } from "../b/index.ts"; import { plan } from "../../quota/plans.ts"; export const inner = value + plan;',
        ...area("b"),
        "server/quota/plans.ts": 'import { setting } from "../toolkit/config.ts"; export const plan = setting;',
        "server/toolkit/config.ts": "export const setting = 1;",
      }),
    ).toEqual([]);
  });

  it("refuse an import of another area's internal file", async () => {
    expect(
      await violations({ ...area("a"), "server/areas/a/x.ts": 'import { y } from "../b/y.ts"; export const x = y;', ...area("b"), "server/areas/b/y.ts": "export const y = 1;" }),
    ).toEqual(["area-public-surface: server/areas/a/x.ts -> server/areas/b/y.ts"]);
  });

  it("refuse two areas that use each other, even with no file-level cycle", async () => {
    expect(
      await violations({
        ...area("a"),
        "server/areas/a/x.ts": 'import { value } from "../b/index.ts"; export const x = value;',
        ...area("b"),
        "server/areas/b/y.ts": 'import { value } from "../a/index.ts"; export const y = value;',
      }),
    ).toEqual(["no-circular-areas: server/areas/a -> server/areas/b", "no-circular-areas: server/areas/b -> server/areas/a"]);
  });

  it("refuse an area's file importing its own index.ts", async () => {
    expect(await violations({ ...area("a"), "server/areas/a/x.ts": 'import { value } from "./index.ts"; export const x = value;' })).toEqual([
      "area-index-not-from-inside: server/areas/a/x.ts -> server/areas/a/index.ts",
    ]);
  });

  it("refuse quota/ reaching an area, and the toolkit reaching quota/ or an area", async () => {
    expect(
      await violations({
        ...area("a"),
        "server/quota/usage.ts": 'import { value } from "../areas/a/index.ts"; export const usage = value;',
        "server/toolkit/services.ts": 'import { usage } from "../quota/usage.ts"; import { value } from "../areas/a/index.ts"; export const s = usage + value;',
      }),
    ).toEqual([
      "quota-below-the-areas: server/quota/usage.ts -> server/areas/a/index.ts",
      "toolkit-not-up: server/toolkit/services.ts -> server/areas/a/index.ts",
      "toolkit-not-up: server/toolkit/services.ts -> server/quota/usage.ts",
    ]);
  });

  it("refuse an area reaching the list of areas above it", async () => {
    expect(await violations({ ...area("a", 'import { areas } from "../../areas.ts"; export const value = areas;'), "server/areas.ts": "export const areas = [];" })).toEqual([
      "area-list-only-from-the-top: server/areas/a/index.ts -> server/areas.ts",
      "areas-not-up: server/areas/a/index.ts -> server/areas.ts",
    ]);
  });
});
