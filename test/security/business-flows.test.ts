import { describe, expect, it } from "vitest";
import { useTestService } from "../support/fixtures.ts";

// API6 Unrestricted Access to Sensitive Business Flows (issue 23 item 2): limits hold under
// concurrency. The plan quotas have their own concurrent tests (personas: 8 creates racing for 2
// slots, test/personas/personas.test.ts; knowledge: 9 uploads racing for 5, test/knowledge/
// documents.test.ts; messages: sends at the quota edge, test/conversations/chat.test.ts), as do the
// auth attempt limits (test/auth/limits.test.ts) and the rate limit across two processes
// (test/foundation/rate-limit.test.ts). This adds the general rate limit under one concurrent burst.
const LIMIT = 40;
const fixture = useTestService({ env: { RATE_LIMIT_PER_MINUTE: String(LIMIT) } });

describe("API6: the rate limit under a concurrent burst", () => {
  it("admits exactly the limit out of a burst of concurrent requests, and refuses the rest with 429 and Retry-After", async () => {
    const { service, alice } = fixture;
    // Registration and this file's own set-up used part of the minute: count what is left.
    const probe = await service.fetch("/v1/auth/me", { headers: alice.auth });
    const left = Number(probe.headers.get("x-ratelimit-remaining"));
    expect(left).toBeGreaterThan(10);
    const answers = await Promise.all(Array.from({ length: left + 20 }, () => service.fetch("/v1/auth/me", { headers: alice.auth })));
    const admitted = answers.filter((r) => r.status === 200).length;
    const refused = answers.filter((r) => r.status === 429);
    expect(admitted).toBe(left);
    expect(refused).toHaveLength(20);
    for (const r of refused) expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    await Promise.all(answers.map((r) => r.arrayBuffer()));
  });
});
