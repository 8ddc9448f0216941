import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { jsonHeaders, startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser } from "../support/users.ts";

// The limit protects the service and is shared: counted in the database, so a client cannot
// multiply its allowance by landing on different processes, and every answer tells it where it stands.
const LIMIT = 5;
let service: TestService;

const keys = { first: "", second: "" };

beforeAll(async () => {
  // The users and their keys are made before the limit is this low.
  service = await startTestService({ env: { RATE_LIMIT_PER_MINUTE: String(LIMIT) } });
  for (const name of ["first", "second"] as const) {
    await service.services.db.knex("rate_limits").delete();
    keys[name] = await apiKeyFor(service, await registerUser(service));
  }
});

afterAll(async () => {
  await service?.close();
});

// Each test starts with fresh counters, so that one test's requests do not count in the next.
beforeEach(async () => {
  await service.services.db.knex("rate_limits").delete();
});

function limitHeaders(response: Response) {
  return {
    limit: Number(response.headers.get("x-ratelimit-limit")),
    remaining: Number(response.headers.get("x-ratelimit-remaining")),
    reset: Number(response.headers.get("x-ratelimit-reset")),
  };
}

function expectResetSoon(reset: number) {
  const now = Date.now() / 1000;
  expect(Number.isInteger(reset)).toBe(true);
  expect(reset).toBeGreaterThanOrEqual(Math.floor(now));
  expect(reset).toBeLessThanOrEqual(Math.ceil(now + 60));
}

async function expectRateLimited(response: Response) {
  expect(response.status).toBe(429);
  const body = await response.json();
  expect(body.error.code).toBe("rate_limited");
  const retryAfter = response.headers.get("retry-after");
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(retryAfter)).toBeLessThanOrEqual(60);
  expect(body.error.details.retry_after).toBe(Number(retryAfter));
  expect(limitHeaders(response).remaining).toBe(0);
}

const withKey = (key: string): RequestInit => ({ headers: { "x-api-key": key } });

describe("the rate limit", () => {
  it("puts the limit headers on every response: success, 404, 400 and 401", async () => {
    // All four requests come from one client: no credential, so the client IP.
    const responses = [
      await service.fetch("/healthz"),
      await service.fetch("/v1/no-such-thing"),
      await service.fetch("/v1/auth/login", { method: "POST", headers: jsonHeaders, body: '{"email": ' }),
      await service.fetch("/v1/personas"),
    ];
    expect(responses.map((response) => response.status)).toEqual([200, 404, 400, 401]);
    responses.forEach((response, index) => {
      const { limit, remaining, reset } = limitHeaders(response);
      expect(limit).toBe(LIMIT);
      expect(remaining).toBe(LIMIT - 1 - index);
      expectResetSoon(reset);
    });
  });

  it("answers the request over the limit with 429 rate_limited and Retry-After", async () => {
    for (let i = 1; i <= LIMIT; i++) {
      const response = await service.fetch("/healthz", withKey("pk_over_limit"));
      expect(response.status).toBe(200);
      expect(limitHeaders(response).remaining).toBe(LIMIT - i);
    }
    const refused = await service.fetch("/healthz", withKey("pk_over_limit"));
    await expectRateLimited(refused);
    expect(limitHeaders(refused).limit).toBe(LIMIT);
    expectResetSoon(limitHeaders(refused).reset);
  });

  it("counts each user separately, and every call without a valid credential against the client's address (issue 31 M1)", async () => {
    // Made-up credentials are free to make: each must not buy a fresh allowance (nor a row of its own).
    for (let i = 0; i < LIMIT; i++) expect((await service.fetch("/healthz", withKey(`pk_made_up_${i}`))).status).toBe(200);
    await expectRateLimited(await service.fetch("/healthz", withKey("pk_made_up_again")));
    await expectRateLimited(await service.fetch("/healthz", { headers: { authorization: "Bearer not-a-token" } }));
    await expectRateLimited(await service.fetch("/healthz"));
    const rows = await service.services.db.knex("rate_limits").where("key", "like", "api:%").select("key");
    expect(rows.map((row: { key: string }) => row.key)).toEqual(["api:ip:127.0.0.1"]);

    // Valid keys count against their users, apart from the address and from each other.
    for (let i = 0; i < LIMIT; i++) expect((await service.fetch("/healthz", withKey(keys.first))).status).toBe(200);
    await expectRateLimited(await service.fetch("/healthz", withKey(keys.first)));
    const other = await service.fetch("/healthz", withKey(keys.second));
    expect(other.status).toBe(200);
    expect(limitHeaders(other).remaining).toBe(LIMIT - 1);
  });

  it("is shared by two server processes on the same database", async () => {
    // The second process connects to the first one's database: the PostgreSQL test database, or
    // the embedded one the first process serves on loopback (instead of starting its own).
    const second = await startTestService({
      database: service.database,
      env: { RATE_LIMIT_PER_MINUTE: String(LIMIT), DATABASE_URL: service.services.db.url, WORKER_ENABLED: "false" },
    });
    try {
      expect(second.url).not.toBe(service.url);
      const statuses: number[] = [];
      for (let i = 0; i < LIMIT; i++) {
        const response = await (i % 2 ? second : service).fetch("/healthz", withKey("pk_shared"));
        statuses.push(response.status);
        expect(limitHeaders(response).remaining).toBe(LIMIT - 1 - i);
      }
      expect(statuses).toEqual(Array(LIMIT).fill(200));
      // The sixth request overall is refused whichever process answers it.
      await expectRateLimited(await second.fetch("/healthz", withKey("pk_shared")));
      await expectRateLimited(await service.fetch("/healthz", withKey("pk_shared")));
    } finally {
      await second.close();
    }
  });
});
