import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

// test/clients is an npm package of its own: the client libraries as their users install them, at
// exact versions that conflict with the project's own dependencies. Every test file here imports
// this module first, so that a missing or stale install fails the file with what to run, instead
// of a module-not-found error, or worse, a test quietly running the project's own `openai` or `ai`
// (which Node finds one folder up when test/clients/node_modules lacks them).

const here = import.meta.dirname;
const manifest = JSON.parse(readFileSync(join(here, "package.json"), "utf8")) as { dependencies: Record<string, string> };

const problems = Object.entries(manifest.dependencies).flatMap(([name, wanted]) => {
  const installed = join(here, "node_modules", name, "package.json");
  if (!existsSync(installed)) return [`${name} is not installed`];
  const { version } = JSON.parse(readFileSync(installed, "utf8")) as { version: string };
  return version === wanted ? [] : [`${name} is ${version}, test/clients/package.json wants ${wanted}`];
});

if (problems.length > 0) {
  const what = existsSync(join(here, "node_modules")) ? problems.join("; ") : "test/clients/node_modules is missing";
  throw new Error(`The client-library tests need test/clients' own packages: run \`npm run clients:install\` in the project root (${what}).`);
}
