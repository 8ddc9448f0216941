// `npm run bench:cli`: how long the CLI takes to start, as a ratio to a bare `node -e 0` measured
// in the same run (alternating, so machine load hits both alike). Also the reason `persona api`
// reads generated/openapi.json: parsing that JSON against parsing the YAML of the same contract.
// ROUNDS=n changes the number of rounds (default 7); medians are printed.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import YAML from "yaml";

const root = fileURLToPath(new URL("..", import.meta.url));
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const cli = ["cli/persona.ts"];
const cases: [name: string, args: string[]][] = [
  ["node -e 0 (baseline)", ["-e", "0"]],
  ["persona --help", [...cli, "--help"]],
  ["persona keys --help", [...cli, "keys", "--help"]],
  ["persona api --help", [...cli, "api", "--help"]],
  ["persona api personas_get --help", [...cli, "api", "personas_get", "--help"]],
];

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

function timeChild(args: string[]): number {
  const started = performance.now();
  execFileSync(process.execPath, args, { cwd: root, stdio: "ignore", env: { PATH: process.env.PATH, HOME: process.env.HOME } });
  return performance.now() - started;
}

const times = new Map<string, number[]>(cases.map(([name]) => [name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, args] of cases) times.get(name)!.push(timeChild(args));
}
const baseline = median(times.get(cases[0]![0])!);
console.log(`start-up, median of ${ROUNDS} alternating rounds:`);
for (const [name] of cases) {
  const ms = median(times.get(name)!);
  console.log(`  ${name.padEnd(34)} ${ms.toFixed(0).padStart(6)} ms  ${(ms / baseline).toFixed(2)} x baseline`);
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
