#!/usr/bin/env node
// `npm run check`: the contract is fresh and lint-clean, the code type-checks and lints, and its
// imports keep the layers of docs/architecture.md (.dependency-cruiser.mjs).
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { VALIDATOR_FILES } from "./gen-validators.mjs";

const root = resolve(import.meta.dirname, "..");
const env = { ...process.env, PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH}` };

function step(title, command, args) {
  process.stdout.write(`check: ${title}\n`);
  const result = spawnSync(command, args, { cwd: root, env, stdio: "inherit" });
  if (result.status !== 0) {
    process.stderr.write(`check failed: ${title}\n`);
    process.exit(result.status ?? 1);
  }
}

const fresh = mkdtempSync(join(tmpdir(), "persona-check-"));
try {
  step("regenerate the contract", process.execPath, [join(root, "scripts", "gen.mjs"), fresh]);
  for (const file of ["openapi.yaml", "openapi.json", "openapi.d.ts", ...VALIDATOR_FILES]) {
    const committed = readFileSync(join(root, "generated", file), "utf8");
    if (committed !== readFileSync(join(fresh, file), "utf8")) {
      process.stderr.write(`check failed: generated/${file} is stale; run \`npm run gen\` and commit it\n`);
      process.exit(1);
    }
  }
  process.stdout.write("check: generated/ is up to date\n");
} finally {
  rmSync(fresh, { recursive: true, force: true });
}
// The scope table in the docs is generated from the contract and the server's scope rule.
process.stdout.write("check: docs/scopes.md is up to date\n");
{
  const printed = spawnSync(process.execPath, [join(root, "scripts", "scope-table.ts")], { cwd: root, env, encoding: "utf8" });
  if (printed.status !== 0 || printed.stdout !== readFileSync(join(root, "docs", "scopes.md"), "utf8")) {
    process.stderr.write(`check failed: docs/scopes.md is stale; run \`npm run gen\`\n${printed.stderr ?? ""}`);
    process.exit(1);
  }
}
step("the SDK's generated methods (sdk/src/generated/) and sdk/README.md's table of them are up to date", process.execPath, [join(root, "scripts", "gen-sdk.ts"), "--check"]);
step("docs/extensions.md and the README's operation counts are up to date", process.execPath, [join(root, "scripts", "operation-docs.ts"), "--check"]);
step("the docs agree with the code (commands, Node versions, the README's mock calls)", process.execPath, [join(root, "scripts", "docs-check.ts")]);
step("docs/adr/README.md's index is up to date", process.execPath, [join(root, "scripts", "adr-index.ts"), "--check"]);
step("the README's settings table is up to date", process.execPath, [join(root, "scripts", "settings-table.ts"), "--check"]);
step("lint the OpenAPI document (Redocly)", "redocly", ["lint", "generated/openapi.yaml", "--format", "stylish"]);
step("type-check (tsc)", "tsc", ["--noEmit", "-p", "tsconfig.json"]);
// test/clients is an npm package of its own (the real client libraries), installed apart.
if (existsSync(join(root, "test", "clients", "node_modules"))) {
  step("type-check the client-library tests (test/clients)", "tsc", ["--noEmit", "-p", "test/clients/tsconfig.json"]);
} else {
  process.stdout.write("check: test/clients not installed, its type check skipped (npm run clients:install)\n");
}
step("type-check the SDK on its own terms (no Node types)", "tsc", ["--noEmit", "-p", "sdk/tsconfig.json"]);
step("type-check the conformance suite", "tsc", ["--noEmit", "-p", "conformance/tsconfig.json"]);
step("lint the code (ESLint)", "eslint", ["--max-warnings", "0", "."]);
step("import rules: layers, no cycles (dependency-cruiser)", "depcruise", [
  "--config", ".dependency-cruiser.mjs", "--output-type", "err",
  "server", "sdk/src", "cli", "test", "conformance", "bench", "scripts",
]);
process.stdout.write("check: all passed\n");
