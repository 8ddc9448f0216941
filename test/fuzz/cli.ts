// `npm run fuzz -- --budget N --seed S [--op operationId] [--case N] [--seconds N]`: runs the
// contract fuzzer (test/fuzz/fuzz.e2e.test.ts) with a larger budget than CI's, or replays a finding.
// The database is the tests' (TEST_DATABASE_URL, else embedded PGlite).
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    budget: { type: "string", default: "200" },
    seed: { type: "string" },
    op: { type: "string" },
    case: { type: "string" },
    seconds: { type: "string", default: "120" },
  },
});

const root = join(import.meta.dirname, "..", "..");
const result = spawnSync(join(root, "node_modules", ".bin", "vitest"), ["run", "test/fuzz/fuzz.e2e.test.ts", "--testTimeout", "0"], {
  cwd: root,
  stdio: "inherit",
  env: {
    ...process.env,
    FUZZ_BUDGET: values.budget,
    FUZZ_SECONDS_PER_OPERATION: values.seconds,
    ...(values.seed ? { FUZZ_SEED: values.seed } : {}),
    ...(values.op ? { FUZZ_OP: values.op } : {}),
    ...(values.case ? { FUZZ_CASE: values.case } : {}),
  },
});
process.exit(result.status ?? 1);
