import fc from "fast-check";
import { afterAll, beforeAll } from "vitest";
import { validCasesOf, type CaseContext, type FuzzRequest } from "../fuzz/cases.ts";
import { operations, type FuzzOperation } from "../fuzz/contract.ts";
import { send, type FuzzAnswer } from "../fuzz/send.ts";
import { buildWorld, loopbackPlatforms, type Actor, type World } from "../fuzz/world.ts";
import { startTestService, type TestService, type TestServiceOptions } from "../support/service.ts";
import { startReceiver, type Receiver } from "../webhooks/receiver.ts";

// The OWASP API Top 10 matrix (docs/security.md) is generated from the contract like the fuzzer,
// on the fuzzer's fixtures and request generator: one valid request per operation, sent as whoever
// the check needs.

export interface SecurityFixture {
  service: TestService;
  world: World;
  receiver: Receiver;
}

/** A service and the two users' fixtures for the tests of the file. */
export function useWorld(options: TestServiceOptions & { strangers?: boolean } = {}): SecurityFixture {
  const fixture = {} as SecurityFixture;
  beforeAll(async () => {
    fixture.receiver = await startReceiver();
    fixture.service = await startTestService({
      ...options,
      env: { ...loopbackPlatforms(fixture.receiver.url), RATE_LIMIT_PER_MINUTE: "1000000", DEFAULT_PLAN: "creator", WEBHOOKS_ALLOW_PRIVATE_URLS: "true", PROVIDER_CONNECTIONS_ALLOW_PRIVATE_URLS: "true", ...options.env },
    });
    fixture.world = await buildWorld(fixture.service, fixture.receiver.url, { strangers: options.strangers ?? false });
  }, 180_000);
  afterAll(async () => {
    await fixture.service?.close();
    await fixture.receiver?.close();
  });
  return fixture;
}

/** Operations that need a credential, in the contract's order. */
export const scopedOperations = operations.filter((op) => op.scope);

/** A context whose fixture values are `values`' and whose credentials are `as`. */
export function contextFor(values: Actor, as: Record<string, string>, urls: string[] = ["https://127.0.0.1:9/"]): CaseContext {
  const gen = { valuesFor: (name: string) => values.values[name], url: fc.constantFrom(...urls) };
  return {
    own: gen,
    other: gen,
    bodyLimitBytes: 1024 * 1024,
    credentials: { own: as, other: as, revokedKey: "", unsignedJwt: "", foreignJwt: "" },
  };
}

/** One valid request of `op` (the same one for the same seed), with `values`' fixtures, sent as `as`. */
export function validRequest(op: FuzzOperation, values: Actor, as: Record<string, string>, seed = 1, contentType?: string): FuzzRequest {
  const [request] = fc.sample(validCasesOf(op, contextFor(values, as), contentType), { seed, numRuns: 1 });
  // Credentials are the caller's to choose here, also on credential-free operations. No
  // Idempotency-Key: one seed draws the same key for every operation, and a key reused with
  // another request is a 409 before anything else is checked.
  const { "idempotency-key": _key, ...headers } = request!.headers;
  return { ...request!, headers: { ...headers, ...as } };
}

export function call(service: TestService, request: FuzzRequest): Promise<FuzzAnswer> {
  return send(service.url, request);
}

/** DELETE operations last, children before parents, the account's deletion very last. */
export function deletionsLast(list: FuzzOperation[]): FuzzOperation[] {
  const rank = (op: FuzzOperation) => (op.method !== "DELETE" ? 0 : op.path === "/v1/auth/me" ? 100 : 50 - op.path.split("/").length);
  return [...list].sort((x, y) => rank(x) - rank(y));
}

/** What of `actor`'s private data shows in `text`: its marker and the ids of its private resources. */
export function leaksOf(actor: Actor, text: string): string[] {
  return [actor.marker, ...actor.privateIds].filter((secret) => text.includes(secret));
}
