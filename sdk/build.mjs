#!/usr/bin/env node
// Builds the published package into sdk/dist: ESM and CJS bundles of src/index.ts (esbuild), and
// one self-contained declaration file (dts-bundle-generator) that inlines the contract types from
// ../generated/openapi.d.ts, so the package depends on nothing outside itself. The same .d.ts
// serves `require` users as index.d.cts: it has no relative imports that would need rewriting.
//   node sdk/build.mjs                      the package: sdk/dist
//   node sdk/build.mjs --out DIR --esm-only  the ESM bundle alone, elsewhere (the browser test)
import { execFileSync } from "node:child_process";
import { copyFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { build } from "esbuild";

const { values: args } = parseArgs({ options: { out: { type: "string" }, "esm-only": { type: "boolean", default: false } } });
const sdk = resolve(import.meta.dirname);
const dist = resolve(args.out ?? join(sdk, "dist"));
rmSync(dist, { recursive: true, force: true });

const common = {
  entryPoints: [join(sdk, "src", "index.ts")],
  bundle: true,
  // Neutral: the same output runs in Node 20+ and in browsers; nothing Node-specific is bundled.
  platform: "neutral",
  target: "es2022",
  external: ["openapi-fetch", "eventsource-parser"],
  sourcemap: true,
  logLevel: "warning",
};
await build({ ...common, format: "esm", outfile: join(dist, "index.js") });
if (args["esm-only"]) {
  process.stdout.write(`sdk: built ${dist} (index.js)\n`);
  process.exit(0);
}
await build({ ...common, format: "cjs", outfile: join(dist, "index.cjs"), mainFields: ["module", "main"] });

execFileSync(
  join(sdk, "..", "node_modules", ".bin", "dts-bundle-generator"),
  ["--project", join(sdk, "tsconfig.json"), "--no-banner", "--export-referenced-types=false", "-o", join(dist, "index.d.ts"), join(sdk, "src", "index.ts")],
  { stdio: ["ignore", "ignore", "inherit"] },
);
copyFileSync(join(dist, "index.d.ts"), join(dist, "index.d.cts"));
process.stdout.write(`sdk: built ${dist} (index.js, index.cjs, index.d.ts, index.d.cts)\n`);
