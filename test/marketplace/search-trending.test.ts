import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { refreshTrending } from "../../server/areas/personas/trending.ts";
import { archiveOf, purgeDeletedAccounts } from "../support/account-data.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { call, deleteAccount, makePersona, messagesFor } from "../social/helpers.ts";

// The marketplace's stored search columns and trending scores (migration 0014): `q` is one match
// of the listing's tsvector of name, description and tags, kept current when the persona changes; `listed` following the persona and the creator's account; the trending
// sort from the refreshed scores, in a stable order with paging that neither repeats nor skips.
let service: TestService;
let clock = new Date("2026-11-21T10:00:00.000Z");
const DAY_MS = 24 * 60 * 60 * 1000;
const tick = (ms = 1000) => (clock = new Date(clock.getTime() + ms));
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let creator: TestUser;
let fan: TestUser;
const anonymous = undefined;

async function publish(name: string, tags: string[], description = `${name}, described.`): Promise<{ personaId: string; id: string }> {
  const persona = await makePersona(service, creator, name, { is_public: false, description });
  tick();
  const listing = await call(service, creator, "POST", `/v1/studio/${persona.id}/publish`, 200, { category: "education", tags, pricing: "free" });
  return { personaId: persona.id, id: listing.id };
}

const ids = async (query: string) => (await call(service, anonymous, "GET", `/v1/marketplace?${query}`, 200)).data.map((l: Json) => l.id);

beforeAll(async () => {
  // The sorts are read over every listing of the service: an empty database of its own.
  service = await startTestService({ fresh: true, now: () => clock, env: { RATE_LIMIT_PER_MINUTE: "100000", AUTO_AVATARS: "false" } });
  creator = await registerUser(service);
  fan = await registerUser(service);
  await service.services.db.knex("users").where({ id: creator.id }).update({ plan: "creator" });
});

afterAll(async () => {
  await service?.close();
});

describe("marketplace search", () => {
  let star: { personaId: string; id: string };
  let chess: { personaId: string; id: string };

  beforeAll(async () => {
    star = await publish("Star Guide", ["planets", "deep-sky"], "Talks about telescopes.");
    chess = await publish("Chess Coach", ["strategy"], "Openings and endgames.");
  });

  it("matches full text over name, description and tags together, and only full text", async () => {
    expect(await ids("q=telescope")).toEqual([star.id]); // stemmed description
    expect(await ids("q=PLANET")).toEqual([star.id]); // stemmed tag, any case
    expect(await ids("q=Deep%20Sky")).toEqual([star.id]); // a hyphenated tag by its words
    expect(await ids("q=star%20planets")).toEqual([star.id]); // name and tag together
    expect(await ids("q=%22guide%20star%22")).toEqual([]); // a phrase keeps its order
    expect(await ids("q=ENDGAME")).toEqual([chess.id]);
    expect(await ids("q=chess%20-openings")).toEqual([]);
    expect(await ids("q=tar")).toEqual([]); // a fragment of a word is not a word (docs/adr/0168-listing-fields-sorts-and-full-text-search-read-from-stored.md)
    const both = await call(service, anonymous, "GET", "/v1/marketplace?q=chess%20or%20telescopes&category=education&sort=recent", 200);
    expect(both).toMatchObject({ total: 2 });
    expect(both.data.map((l: Json) => l.id)).toEqual([chess.id, star.id]);
    expect(await call(service, anonymous, "GET", "/v1/marketplace?q=chess&category=other", 200)).toMatchObject({ data: [], total: 0 });
  });

  it("follows the persona's new name and description", async () => {
    await call(service, creator, "PUT", `/v1/personas/${chess.personaId}`, 200, { name: "Go Sensei", description: "Stones and territory." });
    expect(await ids("q=chess")).toEqual([]);
    expect(await ids("q=sensei")).toEqual([chess.id]);
    expect(await ids("q=territories")).toEqual([chess.id]);
    const listing = (await call(service, anonymous, "GET", `/v1/marketplace/${chess.id}`, 200)).data;
    expect(listing).toMatchObject({ name: "Go Sensei", description: "Stones and territory." });
  });

  it("leaves out a private persona and a deleted account's listings, and takes them back when that is undone", async () => {
    // The service is lent: other files' listings may be on the shelf; the private persona leaves it.
    const education = async () => (await call(service, anonymous, "GET", "/v1/marketplace/categories", 200)).data.find((c: Json) => c.slug === "education").count;
    const before = await education();
    await call(service, creator, "PUT", `/v1/personas/${star.personaId}`, 200, { is_public: false });
    expect(await ids("q=telescope")).toEqual([]);
    expect(await education()).toBe(before - 1);
    await call(service, creator, "PUT", `/v1/personas/${star.personaId}`, 200, { is_public: true });
    expect(await ids("q=telescope")).toEqual([star.id]);

    const { knex } = service.services.db;
    await knex("users").where({ id: creator.id }).update({ deleted_at: clock });
    expect(await call(service, anonymous, "GET", "/v1/marketplace?q=telescope", 200)).toMatchObject({ data: [], total: 0 });
    await call(service, anonymous, "GET", `/v1/marketplace/${star.id}`, 404);
    await knex("users").where({ id: creator.id }).update({ deleted_at: null });
    expect(await ids("q=telescope")).toEqual([star.id]);
  });
});

describe("category counts", () => {
  it("stay exact when 20 listings are published, then unlisted, at once", async () => {
    const categories = ["productivity", "education", "entertainment", "lifestyle"];
    const owners = await Promise.all(Array.from({ length: 20 }, () => registerUser(service)));
    const personas = await Promise.all(owners.map((user, i) => makePersona(service, user, `Crowd ${i}`, { is_public: false })));
    const published = await Promise.all(
      owners.map((user, i) => call(service, user, "POST", `/v1/studio/${personas[i]!.id}/publish`, 200, { category: categories[i % 4], tags: [], pricing: "free" })),
    );
    await Promise.all(owners.map((user, i) => (i % 2 === 0 ? call(service, user, "PUT", `/v1/personas/${personas[i]!.id}`, 200, { is_public: false }) : undefined)));
    await Promise.all(owners.map((user, i) => (i % 3 === 0 ? call(service, user, "POST", `/v1/studio/${personas[i]!.id}/publish`, 200, { category: "developer-tools", tags: [], pricing: "free" }) : undefined)));
    const { knex } = service.services.db;
    const recount: { category: string; count: number }[] = await knex("marketplace_listings").where({ listed: true }).groupBy("category").select("category", knex.raw("count(*)::int AS count"));
    const expected = Object.fromEntries(recount.map((row) => [row.category, row.count]));
    const { data } = await call(service, anonymous, "GET", "/v1/marketplace/categories", 200);
    for (const category of data) expect(category.count, category.slug).toBe(expected[category.slug] ?? 0);
    for (const category of [...categories, "developer-tools"]) {
      expect((await call(service, anonymous, "GET", `/v1/marketplace?category=${category}&limit=1`, 200)).total).toBe(expected[category] ?? 0);
    }
    expect(published).toHaveLength(20);
  });

  it("stay exact when accounts with listings in the same categories, listed in opposite orders, are deleted at once", async () => {
    const shelves = async () => (await call(service, anonymous, "GET", "/v1/marketplace/categories", 200)).data.filter((c: Json) => ["lifestyle", "productivity"].includes(c.slug));
    const before = await shelves();
    for (let round = 0; round < 3; round++) {
      const pair = [await registerUser(service), await registerUser(service)];
      for (const [i, user] of pair.entries()) {
        for (const category of i === 0 ? ["lifestyle", "productivity"] : ["productivity", "lifestyle"]) {
          const persona = await makePersona(service, user, `${category} ${round}`, { is_public: false });
          await call(service, user, "POST", `/v1/studio/${persona.id}/publish`, 200, { category, tags: [], pricing: "free" });
        }
      }
      await Promise.all(pair.map((user) => deleteAccount(service, user)));
    }
    expect(await shelves()).toEqual(before);
  });
});

describe("marketplace trending", () => {
  const listings: { personaId: string; id: string }[] = [];

  beforeAll(async () => {
    // Published a second apart, oldest first; scores 0, 5, 0, 5, 2, 0, 0, 0.
    for (let i = 0; i < 8; i++) listings.push(await publish(`Trend ${i}`, []));
    for (const [i, count] of [[1, 5], [3, 5], [4, 2]] as const) await messagesFor(service, fan, listings[i]!.personaId, count, clock);
    // Outside the 7-day window: counts nowhere.
    await messagesFor(service, fan, listings[6]!.personaId, 50, new Date(clock.getTime() - 8 * DAY_MS));
  });

  const trending = async () => (await ids("sort=trending&limit=100")).filter((id: string) => listings.some((l) => l.id === id));
  const at = (...order: number[]) => order.map((i) => listings[i]!.id);

  it("ranks by the refreshed score, then newest, then id; pages neither repeat nor skip", async () => {
    expect(await trending()).toEqual(at(7, 6, 5, 4, 3, 2, 1, 0)); // no refresh yet: all 0, newest first
    await refreshTrending(service.services);
    const order = at(3, 1, 4, 7, 6, 5, 2, 0);
    expect(await trending()).toEqual(order);

    const all = await call(service, anonymous, "GET", "/v1/marketplace?sort=trending&limit=100", 200);
    const paged: string[] = [];
    for (let offset = 0; offset < all.total; offset += 3) {
      const page = await call(service, anonymous, "GET", `/v1/marketplace?sort=trending&limit=3&offset=${offset}`, 200);
      expect(page.total).toBe(all.total);
      paged.push(...page.data.map((l: Json) => l.id));
    }
    expect(paged).toEqual(all.data.map((l: Json) => l.id));
  });

  it("gives a listing published later its persona's score; a private persona is left out", async () => {
    const persona = await makePersona(service, creator, "Late Bloomer", { is_public: true });
    await messagesFor(service, fan, persona.id, 9, clock);
    await refreshTrending(service.services);
    tick();
    const late = await call(service, creator, "POST", `/v1/studio/${persona.id}/publish`, 200, { category: "other", tags: [], pricing: "free" });
    expect((await ids("sort=trending&limit=1"))[0]).toBe(late.id);
    await call(service, creator, "PUT", `/v1/personas/${persona.id}`, 200, { is_public: false });
    expect(await ids("sort=trending&limit=100")).not.toContain(late.id);
  });

  it("drops scores whose messages left the window", async () => {
    clock = new Date(clock.getTime() + 8 * DAY_MS);
    await refreshTrending(service.services);
    expect(await trending()).toEqual(at(7, 6, 5, 4, 3, 2, 1, 0));
  });
});

describe("account data", () => {
  it("withholds the search copies and rollups from the export; the purge takes them all, counters included", async () => {
    const leaving = await registerUser(service);
    const persona = await makePersona(service, leaving, "Leaving Soon", { is_public: false });
    const listing = await call(service, leaving, "POST", `/v1/studio/${persona.id}/publish`, 200, { category: "lifestyle", tags: ["farewell"], pricing: "free" });
    await messagesFor(service, fan, persona.id, 12, clock);
    await refreshTrending(service.services);
    const { knex } = service.services.db;
    const rows = async () =>
      Object.fromEntries(
        await Promise.all(
          ["persona_daily_users", "persona_daily_messages", "persona_daily_senders", "persona_trending_scores"].map(async (table) => [table, (await knex(table).where({ persona_id: persona.id })).length]),
        ),
      );
    expect(await rows()).toEqual({ persona_daily_users: 1, persona_daily_messages: 1, persona_daily_senders: 1, persona_trending_scores: 1 });
    expect(await knex("marketplace_trending").where({ listing_id: listing.id, score: 12 })).toHaveLength(1);
    expect(await knex("marketplace_search").where({ listing_id: listing.id, listed: true, category: "lifestyle" })).toHaveLength(1);

    const archive = (await archiveOf(service.services, leaving.id)) as unknown as Json;
    expect(archive.marketplace_listings).toEqual([expect.objectContaining({ id: listing.id, tags: ["farewell"] })]);
    expect(Object.keys(archive.marketplace_listings[0]).filter((key) => key.startsWith("search"))).toEqual([]);
    for (const key of ["analytics_rollups", "marketplace_indexes", "persona_trending"]) expect(archive).not.toHaveProperty(key);

    const lifestyle = async () => (await call(service, anonymous, "GET", "/v1/marketplace/categories", 200)).data.find((c: Json) => c.slug === "lifestyle").count;
    const before = await lifestyle();
    await deleteAccount(service, leaving);
    expect(await lifestyle()).toBe(before - 1);
    clock = new Date(clock.getTime() + 31 * DAY_MS);
    await purgeDeletedAccounts(service.services);
    expect(await rows()).toEqual({ persona_daily_users: 0, persona_daily_messages: 0, persona_daily_senders: 0, persona_trending_scores: 0 });
    expect(await knex("marketplace_trending").where({ listing_id: listing.id })).toEqual([]);
    expect(await knex("marketplace_search").where({ listing_id: listing.id })).toEqual([]);
    expect(await lifestyle()).toBe(before - 1);
    const recount = await knex("marketplace_listings").where({ listed: true, category: "lifestyle" }).count<{ count: string }[]>({ count: "*" });
    expect(await lifestyle()).toBe(Number(recount[0]!.count));
  });
});
