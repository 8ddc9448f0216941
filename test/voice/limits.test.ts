import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { stt, tts } from "./helpers.ts";

// Voice limits per minute per plan (free and plus: 100 TTS, 60 STT; pro and creator: 1,000 and 600),
// counted in PostgreSQL like the general limit and reported in the X-RateLimit headers.
let service: TestService;

beforeAll(async () => {
  service = await startTestService();
});

afterAll(async () => {
  await service?.close();
});

const notAudio = new TextEncoder().encode("not audio");

async function onPlan(plan: string): Promise<TestUser> {
  const user = await registerUser(service);
  await service.services.db.knex("users").where({ id: user.id }).update({ plan });
  return user;
}

describe("voice rate limits", () => {
  it("allows 60 speech-to-text calls a minute on the free plan, then 429 with Retry-After, counted in the database", async () => {
    const user = await onPlan("free");
    for (let i = 1; i <= 60; i++) {
      // A file that is not audio is refused after it was counted: cheap calls that still use the limit.
      const response = await stt(service, user, "n.mp3", notAudio);
      expect(response.status).toBe(415);
      expect(response.headers.get("x-ratelimit-limit")).toBe("60");
      // Remaining may lag by a batch still being written to the store (shared-rate-limiter.ts), never lead.
      expect(Number(response.headers.get("x-ratelimit-remaining"))).toBeGreaterThanOrEqual(60 - i);
      await response.arrayBuffer();
    }
    const refused = await stt(service, user, "n.mp3", notAudio);
    const body = await expectError(refused, 429, "rate_limited");
    expect(body.error.message).toContain("60 speech-to-text requests a minute");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(Number(refused.headers.get("x-ratelimit-reset"))).toBeGreaterThan(Date.now() / 1000);
    const rows = await service.services.db.knex("rate_limits").where({ key: `voice_stt_free:user:${user.id}` });
    expect(rows).toHaveLength(1);
    // Text to speech has its own counter: still open.
    expect((await tts(service, user.auth, { text: "Still here." })).status).toBe(200);
  });

  it.each([
    ["plus", "100", "60"],
    ["pro", "1000", "600"],
    ["creator", "1000", "600"],
  ])("reports the %s plan's limits: %s TTS and %s STT a minute", async (plan, ttsLimit, sttLimit) => {
    const user = await onPlan(plan);
    const spoken = await tts(service, user.auth, { text: "Hi." });
    expect(spoken.headers.get("x-ratelimit-limit")).toBe(ttsLimit);
    await spoken.arrayBuffer();
    const heard = await stt(service, user, "n.mp3", notAudio);
    expect(heard.headers.get("x-ratelimit-limit")).toBe(sttLimit);
    await heard.arrayBuffer();
  });

  it("leaves other endpoints on the general limit", async () => {
    const user = await onPlan("free");
    const response = await service.fetch("/v1/auth/me", { headers: user.auth });
    expect(response.headers.get("x-ratelimit-limit")).toBe(String(service.services.config.rateLimitPerMinute));
  });
});
