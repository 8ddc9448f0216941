// `npm run bench:cli`: how long the CLI takes to start, as a ratio to a bare `node -e 0` measured
// in the same run (alternating, so machine load hits both alike): the repository's `persona` (run
// from its TypeScript sources) and the installable package's bundle (packages/cli, built first), on
// the pinned Node and, when the machine has one, on its system Node (the package's Node 20). A simple
// command of the package is to start in under 500 ms (issue 39). Also the reason `persona api`
// reads generated/openapi.json: parsing that JSON against parsing the YAML of the same contract.
// ROUNDS=n changes the number of rounds (default 7); medians are printed.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import YAML from "yaml";

const root = fileURLToPath(new URL("..", import.meta.url));
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const TARGET_MS = 500;
const SYSTEM_NODE = "/usr/bin/node";

execFileSync(process.execPath, ["packages/cli/build.mjs"], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
const repo = "cli/persona.ts";
const bundle = "packages/cli/dist/persona.js";
const simple = new Set<string>();
const cases: [name: string, node: string, args: string[]][] = [
  ["node -e 0 (baseline)", process.execPath, ["-e", "0"]],
  ["repo persona --version", process.execPath, [repo, "--version"]],
  ["repo persona personas list --help", process.execPath, [repo, "personas", "list", "--help"]],
  ["repo persona --help", process.execPath, [repo, "--help"]],
  ["repo persona api --help", process.execPath, [repo, "api", "--help"]],
  ["repo persona api personas_get --help", process.execPath, [repo, "api", "personas_get", "--help"]],
];
const systemNode = existsSync(SYSTEM_NODE) ? execFileSync(SYSTEM_NODE, ["--version"], { encoding: "utf8" }).trim() : undefined;
for (const [label, node] of [["", process.execPath], ...(systemNode ? [[` (${systemNode})`, SYSTEM_NODE]] : [])] as [string, string][]) {
  for (const args of [["--version"], ["personas", "list", "--help"], ["api", "personas_get", "--help"]]) {
    const name = `package persona ${args.join(" ")}${label}`;
    if (args[0] !== "api") simple.add(name);
    cases.push([name, node, [bundle, ...args]]);
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

function timeChild(node: string, args: string[]): number {
  const started = performance.now();
  execFileSync(node, args, { cwd: root, stdio: "ignore", env: { PATH: process.env.PATH, HOME: process.env.HOME } });
  return performance.now() - started;
}

const times = new Map<string, number[]>(cases.map(([name]) => [name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, node, args] of cases) times.get(name)!.push(timeChild(node, args));
}
const baseline = median(times.get(cases[0]![0])!);
console.log(`start-up, median of ${ROUNDS} alternating rounds:`);
for (const [name] of cases) {
  const ms = median(times.get(name)!);
  const target = simple.has(name) ? (ms < TARGET_MS ? `  under ${TARGET_MS} ms` : `  OVER ${TARGET_MS} ms`) : "";
  console.log(`  ${name.padEnd(52)} ${ms.toFixed(0).padStart(6)} ms  ${(ms / baseline).toFixed(2).padStart(5)} x baseline${target}`);
}

const yaml = readFileSync(`${root}/generated/openapi.yaml`, "utf8");
const json = readFileSync(`${root}/generated/openapi.json`, "utf8");
const parse = (fn: () => unknown) => {
  const samples: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now();
    fn();
    samples.push(performance.now() - started);
  }
  return median(samples);
};
const yamlMs = parse(() => YAML.parse(yaml));
const jsonMs = parse(() => JSON.parse(json));
console.log(`contract parse, median of ${ROUNDS}: YAML ${yamlMs.toFixed(0)} ms, JSON ${jsonMs.toFixed(1)} ms (YAML/JSON = ${(yamlMs / jsonMs).toFixed(0)})`);
