import { v7 as uuidv7 } from "uuid";
import { archiveOf, purgeDeletedAccounts } from "../support/account-data.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nonCascadingUserReferences } from "../../server/areas/auth/users/store.ts";
import { feature, unfeature } from "../../server/areas/marketplace/service.ts";
import { refreshTrending } from "../../server/areas/personas/trending.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { call, deleteAccount, makePersona, messagesFor } from "../social/helpers.ts";

// Publish and the marketplace: listing, reads without credentials, ratings and reviews, `use`,
// exact counters under concurrency, limits, other users, deleted accounts, export and purge.
let service: TestService;
let clock = new Date("2026-11-21T10:00:00.000Z");
const DAY_MS = 24 * 60 * 60 * 1000;
const tick = (ms = 1000) => (clock = new Date(clock.getTime() + ms));
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let creator: TestUser;
let other: TestUser;
const PUBLISH = { category: "education", tags: ["Astronomy", "science"], pricing: "free" };

async function creatorUser(): Promise<TestUser> {
  const user = await registerUser(service);
  await service.services.db.knex("users").where({ id: user.id }).update({ plan: "creator" });
  return user;
}

async function published(user: TestUser, name: string, input: Json = PUBLISH, fields: Json = {}): Promise<{ personaId: string; listing: Json }> {
  const persona = await makePersona(service, user, name, { is_public: false, ...fields });
  tick();
  const listing = await call(service, user, "POST", `/v1/studio/${persona.id}/publish`, 200, input);
  return { personaId: persona.id, listing };
}

const anonymous = undefined;

beforeAll(async () => {
  // The sorts are read over every listing of the service: an empty database of its own.
  service = await startTestService({ fresh: true, now: () => clock, env: { RATE_LIMIT_PER_MINUTE: "100000", AUTO_AVATARS: "false" } });
  creator = await creatorUser();
  other = await creatorUser();
});

afterAll(async () => {
  await service?.close();
});

describe("publish", () => {
  it("lists the persona, makes it public and updates the same listing when published again", async () => {
    const { personaId, listing } = await published(creator, "Captain Nova");
    expect(listing).toMatchObject({ persona_id: personaId, status: "published", category: "education", tags: ["astronomy", "science"], pricing: "free" });
    expect(listing.marketplace_url).toMatch(new RegExp(`/marketplace/${listing.id}$`));
    expect((await call(service, creator, "GET", `/v1/personas/${personaId}`, 200)).is_public).toBe(true);

    tick();
    const again = await call(service, creator, "POST", `/v1/studio/${personaId}/publish`, 200, { category: "lifestyle", tags: [], pricing: "premium" });
    expect(again).toMatchObject({ id: listing.id, category: "lifestyle", tags: [], pricing: "premium", published_at: listing.published_at });
  });

  it("is 409 without an active version, 404 for another user's persona, 400 for bad input", async () => {
    const persona = await makePersona(service, creator, "Unversioned", { is_public: false });
    await service.services.db.knex("instruction_versions").where({ persona_id: persona.id }).delete();
    await call(service, creator, "POST", `/v1/studio/${persona.id}/publish`, 409, PUBLISH);

    const mine = await makePersona(service, creator, "Mine", { is_public: true });
    await call(service, other, "POST", `/v1/studio/${mine.id}/publish`, 404, PUBLISH);
    for (const bad of [
      { ...PUBLISH, tags: ["a", "b", "c", "d", "e", "f"] },
      { ...PUBLISH, tags: ["x".repeat(31)] },
      { ...PUBLISH, tags: [""] },
      { ...PUBLISH, category: "cooking" },
      { ...PUBLISH, category: "character" },
      { ...PUBLISH, pricing: "cheap" },
      { category: "education", tags: [] },
    ]) {
      await call(service, creator, "POST", `/v1/studio/${mine.id}/publish`, 400, bad);
    }
    await call(service, creator, "POST", `/v1/studio/${mine.id}/publish`, 200, { ...PUBLISH, tags: ["a", "b", "c", "d", "x".repeat(30)] });
    expect(await service.services.db.knex("marketplace_listings").where({ persona_id: persona.id })).toEqual([]);
  });

  it("deleting the persona removes its listing", async () => {
    const { personaId, listing } = await published(creator, "Short-lived");
    await call(service, creator, "DELETE", `/v1/personas/${personaId}`, 200);
    await call(service, anonymous, "GET", `/v1/marketplace/${listing.id}`, 404);
    expect(await service.services.db.knex("marketplace_listings").where({ id: listing.id })).toEqual([]);
  });
});

describe("marketplace reads", () => {
  let fresh: { creator: TestUser; a: Json; b: Json; c: Json };

  beforeAll(async () => {
    const user = await creatorUser();
    const a = await published(user, "Zebra Tutor", { category: "productivity", tags: ["stripes"], pricing: "free" }, { description: "Teaches zebra facts. And more." });
    const b = await published(user, "Quokka Coach", { category: "productivity", tags: ["smiles"], pricing: "free" }, { description: "Happy marsupial coaching." });
    const c = await published(user, "Lemur Pal", { category: "developer-tools", tags: [], pricing: "free" });
    fresh = { creator: user, a: a.listing, b: b.listing, c: c.listing };
  });

  it("needs no credentials; filters by category and q over name, description and tags; total and stable paging", async () => {
    const productivity = await call(service, anonymous, "GET", "/v1/marketplace?category=productivity&sort=recent", 200);
    expect(productivity.data.map((l: Json) => l.id)).toEqual([fresh.b.id, fresh.a.id]);
    expect(productivity.total).toBe(2);
    expect(productivity.data[1]).toMatchObject({ name: "Zebra Tutor", tagline: "Teaches zebra facts.", rating: 0, review_count: 0, use_count: 0, author: { id: fresh.creator.id } });

    expect((await call(service, anonymous, "GET", "/v1/marketplace?q=zebra", 200)).data.map((l: Json) => l.id)).toEqual([fresh.a.id]);
    expect((await call(service, anonymous, "GET", "/v1/marketplace?q=marsupial", 200)).data.map((l: Json) => l.id)).toEqual([fresh.b.id]);
    expect((await call(service, anonymous, "GET", "/v1/marketplace?q=Stripes", 200)).data.map((l: Json) => l.id)).toEqual([fresh.a.id]);
    expect((await call(service, anonymous, "GET", "/v1/marketplace?q=100%25", 200)).total).toBe(0);

    const all = await call(service, anonymous, "GET", "/v1/marketplace?sort=recent&limit=100", 200);
    const paged: string[] = [];
    for (let offset = 0; offset < all.total; offset += 2) {
      paged.push(...(await call(service, anonymous, "GET", `/v1/marketplace?sort=recent&limit=2&offset=${offset}`, 200)).data.map((l: Json) => l.id));
    }
    expect(paged).toEqual(all.data.map((l: Json) => l.id));
  });

  it("refuses bad parameters", async () => {
    for (const query of ["sort=best", "category=cooking", "limit=0", "limit=101", "offset=-1", `q=${"x".repeat(201)}`, "q="]) {
      await call(service, anonymous, "GET", `/v1/marketplace?${query}`, 400);
    }
  });

  it("sorts by uses, rating and trending", async () => {
    const fan = await registerUser(service);
    await messagesFor(service, fan, fresh.c.persona_id, 5, clock);
    await refreshTrending(service.services);
    const trending = (await call(service, anonymous, "GET", "/v1/marketplace?sort=trending&limit=100", 200)).data.map((l: Json) => l.id);
    expect(trending[0]).toBe(fresh.c.id);

    await call(service, fan, "POST", `/v1/marketplace/${fresh.b.id}/use`, 200);
    expect((await call(service, anonymous, "GET", "/v1/marketplace?sort=popular&limit=1", 200)).data[0].id).toBe(fresh.b.id);

    await call(service, fan, "POST", `/v1/marketplace/${fresh.a.id}/rate`, 201, { rating: 5 });
    await call(service, other, "POST", `/v1/marketplace/${fresh.c.id}/rate`, 201, { rating: 2 });
    const top = (await call(service, anonymous, "GET", "/v1/marketplace?sort=top_rated&limit=100", 200)).data.map((l: Json) => l.id);
    expect(top.indexOf(fresh.a.id)).toBeLessThan(top.indexOf(fresh.c.id));
    expect(top[0]).toBe(fresh.a.id);
  });

  it("categories carry live counts of every slug", async () => {
    const { data } = await call(service, anonymous, "GET", "/v1/marketplace/categories", 200);
    expect(data).toHaveLength(10);
    const counts = Object.fromEntries(data.map((c: Json) => [c.slug, c.count]));
    const total = (await call(service, anonymous, "GET", "/v1/marketplace?limit=1", 200)).total;
    expect(Object.values(counts).reduce((a: number, b) => a + (b as number), 0)).toBe(total);
    expect(counts["developer-tools"]).toBeGreaterThanOrEqual(1);
    expect(data.find((c: Json) => c.slug === "education")).toMatchObject({ name: "Education", description: expect.any(String) });
  });

  it("featured falls back to the best rated, and shows curated listings when there are any", async () => {
    const fallback = (await call(service, anonymous, "GET", "/v1/marketplace/featured", 200)).data;
    expect(fallback.length).toBeGreaterThan(0);
    expect(await feature(service.services, fresh.c.id, "Staff pick")).toBe(true);
    expect((await call(service, anonymous, "GET", "/v1/marketplace/featured", 200)).data).toEqual([
      expect.objectContaining({ id: fresh.c.id, featured_reason: "Staff pick", name: "Lemur Pal" }),
    ]);
    expect(await unfeature(service.services, fresh.c.id)).toBe(true);
    expect(await feature(service.services, uuidv7(), "Nothing")).toBe(false);
  });

  it("detail has the distribution and samples from the greeting and the creator's own chats; unknown ids are 404, malformed 400", async () => {
    const detail = (await call(service, anonymous, "GET", `/v1/marketplace/${fresh.a.id}`, 200)).data;
    expect(detail.rating_distribution).toEqual({ "5": 1, "4": 0, "3": 0, "2": 0, "1": 0 });
    expect(detail.sample_messages).toEqual(["Hi."]);
    expect(detail.author).toHaveProperty("avatar_url");
    await call(service, anonymous, "GET", `/v1/marketplace/${uuidv7()}`, 404);
    await call(service, anonymous, "GET", "/v1/marketplace/not-a-listing", 400);
  });

  it("a persona made private again leaves the marketplace; so does every listing of a deleted account", async () => {
    const user = await creatorUser();
    const { personaId, listing } = await published(user, "Fleeting");
    await call(service, user, "PUT", `/v1/personas/${personaId}`, 200, { is_public: false });
    await call(service, anonymous, "GET", `/v1/marketplace/${listing.id}`, 404);
    const second = await published(user, "Gone With The Account");
    await call(service, anonymous, "GET", `/v1/marketplace/${second.listing.id}`, 200);
    await deleteAccount(service, user);
    await call(service, anonymous, "GET", `/v1/marketplace/${second.listing.id}`, 404);
    const ids = (await call(service, anonymous, "GET", "/v1/marketplace?limit=100", 200)).data.map((l: Json) => l.id);
    expect(ids).not.toContain(second.listing.id);
  });
});

describe("rate and reviews", () => {
  it("creates (201) then replaces (200) one rating per user; refuses your own listing and bad input", async () => {
    const { listing } = await published(creator, "Rated");
    const first = await call(service, other, "POST", `/v1/marketplace/${listing.id}/rate`, 201, { rating: 4, review: "Good." });
    expect(first.data).toMatchObject({ listing_id: listing.id, user_id: other.id, rating: 4, review: "Good." });
    tick();
    const second = await call(service, other, "POST", `/v1/marketplace/${listing.id}/rate`, 200, { rating: 2 });
    expect(second.data).toMatchObject({ id: first.data.id, rating: 2, review: null, created_at: first.data.created_at, updated_at: clock.toISOString() });
    const detail = (await call(service, anonymous, "GET", `/v1/marketplace/${listing.id}`, 200)).data;
    expect(detail).toMatchObject({ rating: 2, review_count: 1, rating_distribution: { "5": 0, "4": 0, "3": 0, "2": 1, "1": 0 } });

    await call(service, creator, "POST", `/v1/marketplace/${listing.id}/rate`, 403, { rating: 5 });
    for (const bad of [{}, { rating: 0 }, { rating: 6 }, { rating: 3.5 }, { rating: 3, review: "x".repeat(2001) }]) {
      await call(service, other, "POST", `/v1/marketplace/${listing.id}/rate`, 400, bad);
    }
    await call(service, other, "POST", `/v1/marketplace/${listing.id}/rate`, 200, { rating: 3, review: "x".repeat(2000) });
    await call(service, other, "POST", `/v1/marketplace/${uuidv7()}/rate`, 404, { rating: 3 });
    await call(service, anonymous, "POST", `/v1/marketplace/${listing.id}/rate`, 401, { rating: 3 });
  });

  it("keeps counters exact under 20 concurrent raters, and lists reviews in each sort", async () => {
    const { listing } = await published(creator, "Crowd Favourite");
    const raters = await Promise.all(Array.from({ length: 20 }, () => registerUser(service)));
    const ratings = raters.map((_, i) => (i % 5) + 1);
    await Promise.all(raters.map((user, i) => call(service, user, "POST", `/v1/marketplace/${listing.id}/rate`, 201, { rating: ratings[i], review: `Review ${i}` })));
    // And all at once again, each changing their mind.
    await Promise.all(raters.map((user, i) => call(service, user, "POST", `/v1/marketplace/${listing.id}/rate`, 200, { rating: 6 - ratings[i]! })));
    const detail = (await call(service, anonymous, "GET", `/v1/marketplace/${listing.id}`, 200)).data;
    expect(detail).toMatchObject({ review_count: 20, rating: 3, rating_distribution: { "5": 4, "4": 4, "3": 4, "2": 4, "1": 4 } });

    const highest = await call(service, anonymous, "GET", `/v1/marketplace/${listing.id}/reviews?sort=highest&limit=50`, 200);
    expect(highest.total).toBe(20);
    expect(highest.data.map((r: Json) => r.rating)).toEqual([...highest.data.map((r: Json) => r.rating)].sort((a, b) => b - a));
    const lowest = await call(service, anonymous, "GET", `/v1/marketplace/${listing.id}/reviews?sort=lowest&limit=4`, 200);
    expect(lowest.data.every((r: Json) => r.rating === 1)).toBe(true);
    expect(lowest.data[0]).toMatchObject({ user: { id: expect.any(String), display_name: expect.any(String) }, review: null });
    await call(service, anonymous, "GET", `/v1/marketplace/${listing.id}/reviews?sort=best`, 400);
    await call(service, anonymous, "GET", `/v1/marketplace/${uuidv7()}/reviews`, 404);
  });
});

describe("use", () => {
  it("copies the fields and active instructions into a private persona of the caller, not the knowledge", async () => {
    const { personaId, listing } = await published(creator, "Copy Me", PUBLISH, { description: "Copyable.", voice_id: "echo" });
    const draft = await call(service, creator, "POST", `/v1/studio/${personaId}/versions`, 201, { instructions: "Draft only." });
    await call(service, creator, "PUT", `/v1/personas/${personaId}`, 200, { instructions: "The active text." });
    expect(draft.status).toBe("draft");
    await service.services.db.knex("knowledge_documents").insert({
      id: uuidv7(), persona_id: personaId, user_id: creator.id, filename: "notes.txt", kind: "txt", size_bytes: 5, status: "ready", created_at: clock,
    });

    const copy = (await call(service, other, "POST", `/v1/marketplace/${listing.id}/use`, 200)).data;
    expect(copy).toMatchObject({ source_listing_id: listing.id, name: "Copy Me", status: "active", created_at: clock.toISOString() });
    const persona = await call(service, other, "GET", `/v1/personas/${copy.persona_id}`, 200);
    expect(persona).toMatchObject({ name: "Copy Me", description: "Copyable.", instructions: "The active text.", voice_id: "echo", is_public: false, greeting_message: "Hi." });
    const row = await service.services.db.knex("personas").where({ id: copy.persona_id }).first();
    expect(row).toMatchObject({ creator_id: other.id, source_listing_id: listing.id });
    expect(await service.services.db.knex("knowledge_documents").where({ persona_id: copy.persona_id })).toEqual([]);
    const versions = await call(service, other, "GET", `/v1/studio/${copy.persona_id}/versions`, 200);
    expect(versions.data).toEqual([expect.objectContaining({ version: 1, status: "active", instructions: "The active text." })]);
    expect((await call(service, anonymous, "GET", `/v1/marketplace/${listing.id}`, 200)).data.use_count).toBe(1);
    await call(service, other, "POST", `/v1/marketplace/${uuidv7()}/use`, 404);
  });

  it("counts against the persona limit (402) and keeps use_count exact under 20 concurrent users", async () => {
    const { listing } = await published(creator, "Popular");
    const users = await Promise.all(Array.from({ length: 20 }, () => registerUser(service)));
    await Promise.all(users.map((user) => call(service, user, "POST", `/v1/marketplace/${listing.id}/use`, 200)));
    expect((await call(service, anonymous, "GET", `/v1/marketplace/${listing.id}`, 200)).data.use_count).toBe(20);

    // The free plan allows three personas.
    const full = users[0]!;
    await makePersona(service, full, "Two");
    await makePersona(service, full, "Three");
    await call(service, full, "POST", `/v1/marketplace/${listing.id}/use`, 402);
    expect((await call(service, anonymous, "GET", `/v1/marketplace/${listing.id}`, 200)).data.use_count).toBe(20);
  });

  it("a premium listing needs a paid plan", async () => {
    const { listing } = await published(creator, "Premium", { ...PUBLISH, pricing: "premium" });
    const free = await registerUser(service);
    await call(service, free, "POST", `/v1/marketplace/${listing.id}/use`, 402);
    await call(service, other, "POST", `/v1/marketplace/${listing.id}/use`, 200);
  });
});

describe("account data", () => {
  it("exports versions and ratings, and the purge removes listings, ratings and versions", async () => {
    const user = await creatorUser();
    const { personaId, listing } = await published(user, "Exported");
    const theirs = await published(other, "Someone Else's");
    await call(service, user, "POST", `/v1/marketplace/${theirs.listing.id}/rate`, 201, { rating: 5, review: "Lovely." });
    const { knex } = service.services.db;
    const archive = (await archiveOf(service.services, user.id)) as unknown as Json;
    expect(archive.instruction_versions).toEqual([expect.objectContaining({ persona_id: personaId, version: 1, status: "active" })]);
    expect(archive.ratings).toEqual([expect.objectContaining({ listing_id: theirs.listing.id, user_id: user.id, rating: 5, review: "Lovely." })]);

    expect(await nonCascadingUserReferences(knex)).toEqual([]);
    await deleteAccount(service, user);
    clock = new Date(clock.getTime() + 31 * DAY_MS);
    await purgeDeletedAccounts(service.services);
    expect(await knex("marketplace_listings").where({ id: listing.id })).toEqual([]);
    expect(await knex("ratings").where({ user_id: user.id })).toEqual([]);
    expect(await knex("instruction_versions").where({ persona_id: personaId })).toEqual([]);
    expect((await call(service, anonymous, "GET", `/v1/marketplace/${theirs.listing.id}`, 200)).data).toMatchObject({ review_count: 0, rating: 0 });
  });
});
