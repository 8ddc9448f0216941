// `npm run check`: what the docs say of the code is true. The facts live in the code and the
// contract; the docs are checked against them here, so no test reads Markdown.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import semver from "semver";

const root = join(import.meta.dirname, "..");
const read = (path: string) => readFileSync(join(root, path), "utf8");
const readme = read("README.md");
const sdkReadme = read("sdk/README.md");
const manifest = JSON.parse(read("package.json")) as { engines: { node: string } };
const sdkManifest = JSON.parse(read("sdk/package.json")) as { engines: { node: string } };
const problems: string[] = [];

// The two commands that set up a fresh machine.
for (const command of ["npm install && npm start", "npm test"]) {
  if (!readme.includes(command)) problems.push(`README.md no longer shows \`${command}\``);
}

// The Node versions the READMEs name are the manifests' minimums.
const minimum = semver.minVersion(manifest.engines.node)!;
const claimed = /Requires Node\.js (\d+\.\d+) or newer/.exec(readme)?.[1];
if (claimed !== `${minimum.major}.${minimum.minor}`) problems.push(`README.md claims Node.js ${claimed ?? "(nothing)"}; package.json's engines say ${minimum.major}.${minimum.minor}`);
const sdkMinimum = semver.minVersion(sdkManifest.engines.node)!;
for (const [name, text] of [["README.md", readme], ["sdk/README.md", sdkReadme]] as const) {
  if (!text.includes(`Node ${sdkMinimum.major}+ and browsers`)) problems.push(`${name} does not say the SDK runs on "Node ${sdkMinimum.major}+ and browsers" (sdk/package.json's engines)`);
}

// The README's calls of the mock name operations of the contract, with UUIDs where the contract
// wants them (Prism answers 422 to an id it cannot accept).
interface Parameter {
  name: string;
  in: string;
  schema?: { type?: string; format?: string; $ref?: string };
}
const contract = JSON.parse(read("generated/openapi.json")) as {
  paths: Record<string, Record<string, { parameters?: Parameter[] }> & { parameters?: Parameter[] }>;
  components: { schemas: Record<string, Parameter["schema"]>; parameters?: Record<string, Parameter> };
};
const deref = <T extends { $ref?: string }>(value: T | undefined): T | undefined => {
  const name = value?.$ref?.split("/").at(-1);
  if (!name) return value;
  const target = value!.$ref!.includes("/parameters/") ? contract.components.parameters?.[name] : contract.components.schemas[name];
  return deref(target as T | undefined);
};
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const templates = Object.entries(contract.paths).map(([template, item]) => ({
  template,
  pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, "([^/]+)")}$`),
  names: [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!),
  parameters: [...(item.parameters ?? []), ...Object.values(item).flatMap((op) => (typeof op === "object" && !Array.isArray(op) && op?.parameters) || [])],
}));
const calls = [...readme.matchAll(/http:\/\/127\.0\.0\.1:4010(\/v1\/[^\s'"`)]+)/g)].map((m) => m[1]!);
if (!calls.length) problems.push("README.md shows no call of the mock (http://127.0.0.1:4010/v1/...)");
for (const call of calls) {
  const path = call.split("?")[0]!;
  const found = templates.find((t) => t.pattern.test(path));
  if (!found) {
    problems.push(`README.md calls the mock at ${call}: no operation of the contract`);
    continue;
  }
  const values = found.pattern.exec(path)!.slice(1);
  found.names.forEach((name, i) => {
    const parameter = found.parameters.map((p) => deref(p as Parameter & { $ref?: string })).find((p) => p?.in === "path" && p.name === name);
    if (deref(parameter?.schema)?.format === "uuid" && !UUID.test(values[i]!)) problems.push(`README.md calls the mock at ${call}: ${name} ${values[i]} is not a UUID`);
  });
}

for (const problem of problems) process.stderr.write(`check failed: ${problem}\n`);
process.exit(problems.length ? 1 : 0);
