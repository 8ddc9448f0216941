import { v7 as uuidv7 } from "uuid";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as rollups from "../../server/toolkit/db/migrations/0014_marketplace_rollups.ts";
import * as greetings from "../../server/toolkit/db/migrations/0027_conversation_greetings.ts";
import { purgeDeletedAccounts } from "../support/account-data.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";
import { call, deleteAccount, makePersona } from "../social/helpers.ts";

// The daily rollups analytics read (migration 0014) stay equal to the messages that are stored:
// whatever order messages arrive in, over UTC days, through deleted conversations, deleted
// messages, a purged account and the migration's own backfill. Analytics are compared with the
// definition of docs/adr/0175-studio-analytics-read-daily-rollups-exact-from-the-stored.md computed here from the messages table itself.
let service: TestService;
let clock = new Date("2026-11-21T15:00:00.000Z");
const DAY_MS = 86_400_000;
let owner: TestUser;
let ownerKey: string;
let personaId: string;
let users: TestUser[];

interface Stored {
  user_id: string;
  role: "user" | "assistant";
  created_at: Date;
}

const utcDay = (at: Date) => Math.floor(at.getTime() / DAY_MS);

/** The analytics of docs/adr/0175-studio-analytics-read-daily-rollups-exact-from-the-stored.md, computed from the stored messages. */
async function expected(days: number) {
  // Exchanged messages: conversations' greetings (depth 0) are none (migration 0027).
  const rows: Stored[] = await service.services.db.knex("messages").where({ persona_id: personaId }).where("depth", ">", 0).select("user_id", "role", "created_at");
  const today = utcDay(clock);
  const from = today - days + 1;
  const split = from + Math.floor(days / 2);
  const inPeriod = rows.filter((row) => utcDay(row.created_at) >= from && utcDay(row.created_at) <= today);
  const senders = (lo: number, hi: number) => new Set(inPeriod.filter((row) => row.role === "user" && utcDay(row.created_at) >= lo && utcDay(row.created_at) <= hi).map((row) => row.user_id));
  const firstHalf = senders(from, split - 1);
  const secondHalf = senders(split, today);
  const retained = [...firstHalf].filter((user) => secondHalf.has(user)).length;
  return {
    message_count: inPeriod.length,
    unique_users: senders(from, today).size,
    retention_rate: firstHalf.size === 0 ? null : retained / firstHalf.size,
    daily_breakdown: Array.from({ length: days }, (_, i) => ({
      date: new Date((from + i) * DAY_MS).toISOString().slice(0, 10),
      messages: inPeriod.filter((row) => utcDay(row.created_at) === from + i).length,
      users: senders(from + i, from + i).size,
    })),
  };
}

async function analytics(days: number) {
  const response = await service.fetch(`/v1/studio/${personaId}/analytics?period=${days}d`, { headers: { "x-api-key": ownerKey } });
  expect(response.status).toBe(200);
  return response.json();
}

/** Every period's analytics equal the definition over the stored messages; the senders rollup equals its recomputation. */
async function expectConsistent(): Promise<void> {
  for (const days of [7, 30, 90]) {
    const body = await analytics(days);
    const want = await expected(days);
    expect({ message_count: body.message_count, unique_users: body.unique_users, retention_rate: body.retention_rate, daily_breakdown: body.daily_breakdown }).toEqual(want);
  }
  const { knex } = service.services.db;
  const recomputed = `SELECT persona_id, day, gap, count(*)::int AS users FROM (
      SELECT persona_id, day, coalesce(least(day - lag(day) OVER (PARTITION BY persona_id, user_id ORDER BY day), 90), 90) AS gap
        FROM persona_daily_users WHERE sent > 0) s GROUP BY 1, 2, 3`;
  const stored = "SELECT persona_id, day, gap::int, users FROM persona_daily_senders";
  for (const [a, b] of [[recomputed, stored], [stored, recomputed]]) {
    expect((await knex.raw(`${a} EXCEPT ${b}`)).rows).toEqual([]);
  }
  const dailyFromMessages = `SELECT persona_id, floor(extract(epoch FROM created_at) / 86400)::int AS day, user_id, count(*)::int AS messages,
      (count(*) FILTER (WHERE role = 'user'))::int AS sent FROM messages WHERE depth > 0 GROUP BY 1, 2, 3`;
  const daily = "SELECT persona_id, day, user_id, messages, sent FROM persona_daily_users";
  const perDay = "SELECT persona_id, floor(extract(epoch FROM created_at) / 86400)::int AS day, count(*)::int FROM messages WHERE depth > 0 GROUP BY 1, 2";
  const perDayStored = "SELECT persona_id, day, messages FROM persona_daily_messages";
  for (const [a, b] of [[dailyFromMessages, daily], [daily, dailyFromMessages], [perDay, perDayStored], [perDayStored, perDay]]) {
    expect((await knex.raw(`${a} EXCEPT ${b}`)).rows).toEqual([]);
  }
}

/** A conversation of `user` with messages at the given days ago and roles, stored in one statement. */
async function conversation(user: TestUser, messages: [daysAgo: number, role: "user" | "assistant"][]): Promise<string> {
  const { knex } = service.services.db;
  const id = uuidv7();
  await knex("conversations").insert({ id, user_id: user.id, persona_id: personaId, title: null, message_count: messages.length, created_at: clock, updated_at: clock });
  await addMessages(id, user, messages);
  return id;
}

async function addMessages(conversationId: string, user: TestUser, messages: [daysAgo: number, role: "user" | "assistant"][]): Promise<void> {
  await service.services.db.knex("messages").insert(
    messages.map(([daysAgo, role]) => ({
      id: uuidv7(), conversation_id: conversationId, user_id: user.id, persona_id: personaId, role, content: "Hi", created_at: new Date(clock.getTime() - daysAgo * DAY_MS),
    })),
  );
}

/** Deterministic pseudo-random numbers, so that a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

beforeAll(async () => {
  service = await startTestService({ now: () => clock, env: { RATE_LIMIT_PER_MINUTE: "100000", AUTO_AVATARS: "false" } });
  owner = await registerUser(service);
  ownerKey = await apiKeyFor(service, owner);
  personaId = (await makePersona(service, owner, "Measured")).id;
  users = [];
  for (let i = 0; i < 5; i++) users.push(await registerUser(service));
});

afterAll(async () => {
  await service?.close();
});

describe("daily rollups", () => {
  it("count a message on its UTC day, to the millisecond", async () => {
    const persona = await makePersona(service, owner, "Midnight");
    const { knex } = service.services.db;
    const id = uuidv7();
    const user = users[0]!;
    await knex("conversations").insert({ id, user_id: user.id, persona_id: persona.id, title: null, message_count: 3, created_at: clock, updated_at: clock });
    const at = (iso: string) => ({ id: uuidv7(), conversation_id: id, user_id: user.id, persona_id: persona.id, role: "user", content: "Hi", created_at: new Date(iso) });
    await knex("messages").insert([at("2026-11-19T23:59:59.999Z"), at("2026-11-20T00:00:00.000Z"), at("2026-11-20T23:59:59.999Z")]);
    const body = await call(service, owner, "GET", `/v1/studio/${persona.id}/analytics?period=7d`, 200);
    const byDate = Object.fromEntries(body.daily_breakdown.map((day: { date: string; messages: number }) => [day.date, day.messages]));
    expect(byDate).toMatchObject({ "2026-11-18": 0, "2026-11-19": 1, "2026-11-20": 2, "2026-11-21": 0 });
    expect(body.unique_users).toBe(1);
  });

  it("retain across days whatever order the days arrive in, counting a user once per period", async () => {
    const [a, b, c, d] = users as [TestUser, TestUser, TestUser, TestUser];
    // 7d: days 6..4 ago are the first half, 3..0 the second.
    await conversation(a, [[1, "user"], [1, "assistant"]]); // second half first...
    await conversation(a, [[5, "user"], [5, "assistant"], [6, "user"]]); // ...then the first, in one statement over two days
    await conversation(b, [[40, "user"], [2, "user"]]); // active long before the period: not in the first half
    await conversation(c, [[6, "assistant"], [0, "user"]]); // only replies in the first half: not a sender there
    await conversation(d, [[5, "user"]]);
    const week = await analytics(7);
    expect(week).toMatchObject({ unique_users: 4, retention_rate: 0.5 });
    await expectConsistent();
    // A day between two known ones changes the later day's gap.
    await conversation(d, [[3, "user"]]);
    await conversation(d, [[20, "user"], [10, "user"], [95, "user"]]);
    expect((await analytics(7)).retention_rate).toBe(1);
    await expectConsistent();
  });

  it("stay equal to the stored messages through many statements in random order", async () => {
    const next = random(14);
    const conversations: { id: string; user: TestUser }[] = [];
    for (let i = 0; i < 40; i++) {
      const user = users[Math.floor(next() * users.length)]!;
      const messages = Array.from({ length: 1 + Math.floor(next() * 4) }, () => [Math.floor(next() * 120), next() < 0.6 ? "user" : "assistant"] as [number, "user" | "assistant"]);
      if (i % 3 === 0 && conversations.length > 0) {
        const earlier = conversations[Math.floor(next() * conversations.length)]!;
        await addMessages(earlier.id, earlier.user, messages);
      } else {
        conversations.push({ id: await conversation(user, messages), user });
      }
    }
    await expectConsistent();
    // One statement over every user and many days, as an import would write.
    const { knex } = service.services.db;
    const bulk = users.map((user) => ({ user, id: uuidv7() }));
    await knex("conversations").insert(bulk.map(({ user, id }) => ({ id, user_id: user.id, persona_id: personaId, title: null, message_count: 0, created_at: clock, updated_at: clock })));
    await knex("messages").insert(
      Array.from({ length: 300 }, () => {
        const { user, id } = bulk[Math.floor(next() * bulk.length)]!;
        const at = new Date(clock.getTime() - Math.floor(next() * 120 * DAY_MS));
        return { id: uuidv7(), conversation_id: id, user_id: user.id, persona_id: personaId, role: next() < 0.5 ? "user" : "assistant", content: "Hi", created_at: at };
      }),
    );
    await expectConsistent();
  });

  it("stay exact when one user's days arrive in concurrent transactions", async () => {
    const [a, b] = users as [TestUser, TestUser];
    const ids = await Promise.all([a, b].map((user) => conversation(user, [[60, "user"]])));
    // Twenty statements at once, each a new day of the same two users, newest and oldest mixed.
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => addMessages(ids[i % 2]!, i % 2 === 0 ? a : b, [[(i * 7) % 45, "user"], [(i * 7) % 45, "assistant"]])),
    );
    await expectConsistent();
  });

  it("forget a deleted conversation and a deleted message", async () => {
    const [a] = users as [TestUser];
    const id = await conversation(a, [[2, "user"], [2, "assistant"], [9, "user"], [33, "user"]]);
    await expectConsistent();
    const before = await analytics(30);
    const response = await service.fetch(`/v1/conversations/${id}`, { method: "DELETE", headers: a.auth });
    expect(response.status).toBe(200);
    expect((await analytics(30)).message_count).toBe(before.message_count - 3);
    await expectConsistent();

    const { knex } = service.services.db;
    const middle = await knex("messages").where({ persona_id: personaId, role: "user" }).orderBy("created_at").offset(3).first("id");
    await knex("messages").where({ id: middle.id }).delete();
    await expectConsistent();
  });

  it("forget a purged account's messages and keep the others", async () => {
    const gone = users.pop()!;
    await conversation(gone, [[1, "user"], [4, "user"], [4, "assistant"], [50, "user"]]);
    await expectConsistent();
    await deleteAccount(service, gone);
    clock = new Date(clock.getTime() + 31 * DAY_MS);
    await purgeDeletedAccounts(service.services);
    const { knex } = service.services.db;
    expect(await knex("persona_daily_users").where({ user_id: gone.id })).toEqual([]);
    expect((await analytics(90)).unique_users).toBeGreaterThan(0);
    await expectConsistent();
  });

  it("are rebuilt by the migration from the stored messages", async () => {
    const { knex } = service.services.db;
    const before = await Promise.all([7, 30, 90].map(analytics));
    // Counts the rollups never saw: the migration rebuilds from the messages, not from the old rollup.
    await knex("persona_daily_users").update({ messages: 999 });
    await knex.transaction(async (trx) => {
      await rollups.down(trx);
      await rollups.up(trx);
      // And the later migration that makes the rollups' triggers skip greetings, as an upgrade runs it.
      await greetings.up(trx);
    });
    await expectConsistent();
    expect(await Promise.all([7, 30, 90].map(analytics))).toEqual(before.map((body) => ({ ...body, id: expect.any(String) })));
  });
});
