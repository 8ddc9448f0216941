import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useHostResolver } from "../../server/toolkit/providers/address-guard.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { startReceiver, type Receiver } from "../webhooks/receiver.ts";
import { forbidEgress, type EgressGuard } from "./no-egress.ts";
import { formatReport, fuzz, replayCommand } from "./run.ts";
import { buildWorld, loopbackPlatforms, worldIntact, type World } from "./world.ts";

// The contract-driven fuzzer in the normal suite (issue 23 item 1): every operation of the contract,
// FUZZ_BUDGET cases each (20 by default), a new seed each run unless FUZZ_SEED is set. `npm run fuzz`
// runs this file with more (--budget, --seed, --op, --case).
const seed = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const budget = Number(process.env.FUZZ_BUDGET ?? 20);
const only = process.env.FUZZ_OP || undefined;
const caseIndex = process.env.FUZZ_CASE === undefined || process.env.FUZZ_CASE === "" ? undefined : Number(process.env.FUZZ_CASE);
const secondsPerOperation = Number(process.env.FUZZ_SECONDS_PER_OPERATION ?? 20);

let service: TestService;
let receiver: Receiver;
let guard: EgressGuard;
let restoreResolver: () => void;
let world: World;

beforeAll(async () => {
  guard = forbidEgress();
  // Webhook URLs the fuzzer invents resolve to loopback only: no name is ever looked up.
  restoreResolver = useHostResolver(async () => [{ address: "127.0.0.1", family: 4 }]);
  receiver = await startReceiver();
  service = await startTestService({
    env: {
      ...loopbackPlatforms(receiver.url),
      RATE_LIMIT_PER_MINUTE: "1000000",
      // Room for the fixtures and every valid create of the run (personas, documents, messages).
      DEFAULT_PLAN: "creator",
      WEBHOOKS_ALLOW_PRIVATE_URLS: "true",
      PROVIDER_CONNECTIONS_ALLOW_PRIVATE_URLS: "true",
      WEBHOOKS_TIMEOUT_MS: "1000",
    },
  });
  const started = Date.now();
  world = await buildWorld(service, receiver.url);
  console.log(`fixtures made in ${Date.now() - started} ms`);
}, 120_000);

afterAll(async () => {
  await service?.close();
  await receiver?.close();
  restoreResolver?.();
  guard?.restore();
});

describe("the contract fuzzer", () => {
  it("gets an answer within the contract to every request, never a 5xx of its own, and nothing leaves loopback", async () => {
    let rebuilt = 0;
    let refreshMs = 0;
    console.log(`fuzz seed ${seed} (replay the whole run: npm run fuzz -- --seed ${seed} --budget ${budget})`);
    const report = await fuzz({
      baseUrl: service.url,
      seed,
      budget,
      only,
      caseIndex,
      secondsPerOperation,
      bodyLimitBytes: service.services.config.bodyLimitBytes,
      urls: [`https://127.0.0.1:${receiver.port}/`, "https://localhost/fuzz/"],
      world,
      refreshWorld: async () => {
        const started = Date.now();
        if (!(await worldIntact(service, world))) {
          world = await buildWorld(service, receiver.url);
          rebuilt++;
        }
        refreshMs += Date.now() - started;
        return world;
      },
      log: (line) => console.log(line),
    });
    console.log(formatReport(report));
    console.log(`fixtures checked or rebuilt (${rebuilt} times) in ${refreshMs} ms`);
    if (world.skipped.length) console.log(`fixtures not made: ${world.skipped.join("; ")}`);
    const findings = report.findings.map((f) => `${f.operationId} #${f.caseIndex}: ${f.problems[0]} (${replayCommand(seed, budget, f.operationId, f.caseIndex)})`);
    expect(findings).toEqual([]);
    expect(guard.attempts).toEqual([]);
    const ready = await service.fetch("/readyz");
    expect(ready.status).toBe(200);
  }, 900_000);
});
