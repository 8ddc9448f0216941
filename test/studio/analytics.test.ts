import { v7 as uuidv7 } from "uuid";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { call, makePersona } from "../social/helpers.ts";

// Studio analytics from the daily rollup: every UTC day of the period, messages, distinct senders,
// retention across the halves, the listing's ratings of the period; limits and other users.
let service: TestService;
const clock = new Date("2026-11-21T15:00:00.000Z");
const DAY_MS = 86_400_000;
const daysAgo = (n: number) => new Date(clock.getTime() - n * DAY_MS);
let owner: TestUser;
let stranger: TestUser;

/** A conversation of `user` with `count` exchanges (user + assistant message) at `at`. */
async function exchanges(user: TestUser, personaId: string, count: number, at: Date) {
  const { knex } = service.services.db;
  const conversationId = uuidv7();
  await knex("conversations").insert({ id: conversationId, user_id: user.id, persona_id: personaId, title: null, message_count: count * 2, created_at: at, updated_at: at });
  await knex("messages").insert(
    Array.from({ length: count * 2 }, (_, i) => ({
      id: uuidv7(), conversation_id: conversationId, user_id: user.id, persona_id: personaId, role: i % 2 === 0 ? "user" : "assistant", content: "Hi", created_at: at,
    })),
  );
}

beforeAll(async () => {
  service = await startTestService({ now: () => clock, env: { RATE_LIMIT_PER_MINUTE: "100000", AUTO_AVATARS: "false" } });
  owner = await registerUser(service);
  stranger = await registerUser(service);
});

afterAll(async () => {
  await service?.close();
});

describe("analytics", () => {
  it("counts messages, users and retention per UTC day of the period", async () => {
    const persona = await makePersona(service, owner, "Measured");
    const [a, b, c] = [await registerUser(service), await registerUser(service), await registerUser(service)];
    await exchanges(a, persona.id, 2, daysAgo(6)); // first half of 7d (days -6..-4)
    await exchanges(b, persona.id, 1, daysAgo(5));
    await exchanges(a, persona.id, 1, daysAgo(1)); // a returns in the second half
    await exchanges(c, persona.id, 3, clock);
    await exchanges(c, persona.id, 5, daysAgo(20)); // outside 7d, inside 30d

    const week = await call(service, owner, "GET", `/v1/studio/${persona.id}/analytics?period=7d`, 200);
    expect(week).toMatchObject({ persona_id: persona.id, period: "7d", message_count: 14, unique_users: 3, retention_rate: 0.5, avg_rating: null, generated_at: clock.toISOString() });
    expect(week.daily_breakdown).toHaveLength(7);
    expect(week.daily_breakdown[0]).toEqual({ date: "2026-11-15", messages: 4, users: 1 });
    expect(week.daily_breakdown[1]).toEqual({ date: "2026-11-16", messages: 2, users: 1 });
    expect(week.daily_breakdown[2]).toEqual({ date: "2026-11-17", messages: 0, users: 0 });
    expect(week.daily_breakdown[6]).toEqual({ date: "2026-11-21", messages: 6, users: 1 });

    const month = await call(service, owner, "GET", `/v1/studio/${persona.id}/analytics`, 200);
    expect(month).toMatchObject({ period: "30d", message_count: 24, unique_users: 3 });
    expect(month.daily_breakdown).toHaveLength(30);
    expect((await call(service, owner, "GET", `/v1/studio/${persona.id}/analytics?period=90d`, 200)).daily_breakdown).toHaveLength(90);
  });

  it("averages the listing's ratings of the period; zeros and nulls without traffic", async () => {
    const persona = await makePersona(service, owner, "Rated", { is_public: false });
    const quiet = await call(service, owner, "GET", `/v1/studio/${persona.id}/analytics?period=7d`, 200);
    expect(quiet).toMatchObject({ message_count: 0, unique_users: 0, avg_rating: null, retention_rate: null });
    const listing = await call(service, owner, "POST", `/v1/studio/${persona.id}/publish`, 200, { category: "other", tags: [], pricing: "free" });
    for (const [i, rating] of [4, 5].entries()) {
      const rater = await registerUser(service);
      await call(service, rater, "POST", `/v1/marketplace/${listing.id}/rate`, 201, { rating });
      if (i === 0) await service.services.db.knex("ratings").where({ user_id: rater.id }).update({ updated_at: daysAgo(40) });
    }
    expect((await call(service, owner, "GET", `/v1/studio/${persona.id}/analytics?period=7d`, 200)).avg_rating).toBe(5);
    expect((await call(service, owner, "GET", `/v1/studio/${persona.id}/analytics?period=90d`, 200)).avg_rating).toBe(4.5);
  });

  it("refuses a bad period; another user's persona is 404", async () => {
    const persona = await makePersona(service, owner, "Mine", { is_public: true });
    await call(service, owner, "GET", `/v1/studio/${persona.id}/analytics?period=1y`, 400);
    await call(service, stranger, "GET", `/v1/studio/${persona.id}/analytics`, 404);
    await call(service, owner, "GET", `/v1/studio/${uuidv7()}/analytics`, 404);
  });
});
