import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../sdk/src/index.ts";
import type { Schemas } from "../../sdk/src/types.ts";
import { expectApiError, expectError, expectOk } from "../support/assertions.ts";
import { sendRaw } from "../support/raw.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// One shelf vocabulary (issue 34 item 3, docs/adr/0290-one-shelf-vocabulary-for-the-marketplace.md):
// every shelf the categories endpoint advertises can be published to, is where the listing shows
// and finds it by `?category=`; the specification's six publish values are shelves of their own;
// a publish without a category files a persona on the shelf of its own category
// (docs/adr/0291-a-persona-s-category-names-its-default-shelf.md).
let service: TestService;
let creator: TestUser;
let stranger: TestUser;

type Shelf = Schemas["MarketplaceCategory"];
const SHELVES: Shelf[] = ["assistant", "creative", "education", "entertainment", "productivity", "roleplay", "companion", "lifestyle", "developer-tools", "other"];
const SPEC_PUBLISH_VALUES: Shelf[] = ["productivity", "education", "entertainment", "lifestyle", "developer-tools", "other"];
/** The documented mapping of persona categories onto shelves (docs/design/marketplace.md). */
const SHELF_OF: Record<Schemas["PersonaCategory"], Shelf> = {
  assistant: "assistant",
  tutor: "education",
  character: "roleplay",
  coach: "lifestyle",
  companion: "companion",
  creative: "creative",
  developer: "developer-tools",
  other: "other",
};

/** A word of this file's own, so that searches see this file's listings only (the service is lent). */
const word = () => `shelf${[...randomBytes(8)].map((b) => String.fromCharCode(97 + (b % 26))).join("")}`;

const anonymous = () => service.api;

/** The creator's personas this file made: deleted at its end, so their listings leave the lent service's shelves. */
const made: string[] = [];

async function persona(user: TestUser, name: string, fields: Partial<Schemas["PersonaCreate"]> = {}): Promise<Schemas["Persona"]> {
  const created = await expectOk(service.clientFor(user).POST("/v1/personas", { body: { name, instructions: `You are ${name}.`, description: `${name}, described.`, is_public: false, ...fields } }), 201);
  made.push(created.id);
  return created;
}

function publish(user: TestUser, personaId: string, body: Schemas["PublishInput"]) {
  return service.clientFor(user).POST("/v1/studio/{persona_id}/publish", { params: { path: { persona_id: personaId } }, body });
}

/** The listings on `shelf` whose text holds `q`. */
async function onShelf(shelf: Shelf, q: string): Promise<string[]> {
  const page = await expectOk(anonymous().GET("/v1/marketplace", { params: { query: { category: shelf, q, limit: 100 } } }));
  expect(page.total).toBe(page.data.length);
  for (const listing of page.data) expect(listing.category).toBe(shelf);
  return page.data.map((listing) => listing.id);
}

async function shelfCounts(): Promise<Map<string, number>> {
  const { data } = await expectOk(anonymous().GET("/v1/marketplace/categories"));
  return new Map(data.map((category) => [category.slug, category.count]));
}

beforeAll(async () => {
  service = await startTestService({ env: { AUTO_AVATARS: "false" } });
  creator = await registerUser(service);
  stranger = await registerUser(service);
  // Enough personas for every shelf (the free plan allows 3).
  await service.services.db.knex("users").where({ id: creator.id }).update({ plan: "creator" });
});

afterAll(async () => {
  for (const id of made) await expectOk(service.clientFor(creator).DELETE("/v1/personas/{id}", { params: { path: { id } } }));
  await service?.close();
});

describe("one shelf vocabulary", () => {
  it("the categories endpoint advertises the ten shelves, with a name and a description each", async () => {
    const { data } = await expectOk(anonymous().GET("/v1/marketplace/categories"));
    expect(data.map((category) => category.slug)).toEqual(SHELVES);
    for (const category of data) expect(category).toMatchObject({ name: expect.any(String), description: expect.any(String), count: expect.any(Number) });
    expect(data.find((category) => category.slug === "roleplay")).toMatchObject({ name: "Roleplay" });
    expect(data.find((category) => category.slug === "companion")).toMatchObject({ name: "Companion" });
  });

  it("every advertised shelf can be published to, shows the listing and finds it by category", async () => {
    const q = word();
    const before = await shelfCounts();
    const listings = new Map<Shelf, string>();
    for (const shelf of SHELVES) {
      const mine = await persona(creator, `${q} ${shelf}`);
      const publication = await expectOk(publish(creator, mine.id, { category: shelf, tags: [shelf], pricing: "free" }));
      expect(publication).toMatchObject({ persona_id: mine.id, status: "published", category: shelf });
      listings.set(shelf, publication.id);
      const { data: detail } = await expectOk(anonymous().GET("/v1/marketplace/{id}", { params: { path: { id: publication.id } } }));
      expect(detail.category).toBe(shelf);
    }
    const after = await shelfCounts();
    for (const shelf of SHELVES) {
      expect(await onShelf(shelf, q), shelf).toEqual([listings.get(shelf)]);
      expect(after.get(shelf), shelf).toBe((before.get(shelf) ?? 0) + 1);
    }
    const everywhere = await expectOk(anonymous().GET("/v1/marketplace", { params: { query: { q, limit: 100 } } }));
    expect(everywhere.total).toBe(SHELVES.length);
  });

  it("the specification's six publish values keep working, each a shelf of its own; publishing again moves the listing", async () => {
    const q = word();
    const mine = await persona(creator, `${q} mover`);
    let listingId: string | undefined;
    let previous: Shelf | undefined;
    for (const shelf of SPEC_PUBLISH_VALUES) {
      const publication = await expectOk(publish(creator, mine.id, { category: shelf, tags: [], pricing: "free" }));
      expect(publication.category).toBe(shelf);
      listingId ??= publication.id;
      expect(publication.id).toBe(listingId);
      expect(await onShelf(shelf, q)).toEqual([listingId]);
      if (previous) expect(await onShelf(previous, q)).toEqual([]);
      previous = shelf;
    }
  });

  it("without a category, a new listing goes on the shelf of the persona's own category and a listed one keeps its shelf", async () => {
    const q = word();
    for (const [category, shelf] of Object.entries(SHELF_OF) as [Schemas["PersonaCategory"], Shelf][]) {
      const mine = await persona(creator, `${q} ${category}`, { category });
      const publication = await expectOk(publish(creator, mine.id, { tags: [], pricing: "free" }));
      expect(publication.category, category).toBe(shelf);
      expect(await onShelf(shelf, q), category).toContain(publication.id);
    }
    // Published to a shelf of the creator's choice, then again without one: the shelf stays.
    const chosen = await persona(creator, `${q} chosen`, { category: "character" });
    const first = await expectOk(publish(creator, chosen.id, { category: "companion", tags: [], pricing: "free" }));
    const again = await expectOk(publish(creator, chosen.id, { tags: ["renamed"], pricing: "premium" }));
    expect(again).toMatchObject({ id: first.id, category: "companion", tags: ["renamed"], pricing: "premium" });
  });

  it("refuses a value that is not a shelf with 400 naming the field, and writes nothing", async () => {
    const q = word();
    const mine = await persona(creator, `${q} refused`);
    const before = await shelfCounts();
    // A persona category that is no shelf, a display name, a wrong case, nothing, the wrong types.
    for (const category of ["character", "tutor", "Roleplay", "ROLEPLAY", "cooking", "", " roleplay", 7, null, ["roleplay"]]) {
      const answer = await sendRaw(service, "POST", `/v1/studio/${mine.id}/publish`, { headers: creator.auth, body: { category, tags: [], pricing: "free" } });
      const body = await expectError(answer, 400, "invalid_request");
      expect(body.error.details.errors.map((e: { path: string }) => e.path), JSON.stringify(category)).toContain("/body/category");
    }
    const unchanged = await expectOk(service.clientFor(creator).GET("/v1/personas/{id}", { params: { path: { id: mine.id } } }));
    expect(unchanged.is_public).toBe(false);
    expect(await service.services.db.knex("marketplace_listings").where({ persona_id: mine.id })).toEqual([]);
    expect(await shelfCounts()).toEqual(before);
    // Browsing by a value that is not a shelf is 400 too.
    for (const category of ["character", "Roleplay", "cooking"]) {
      await expectError(await service.fetch(`/v1/marketplace?category=${encodeURIComponent(category)}`), 400, "invalid_request");
    }
  });

  it("another user's persona is 404 with a shelf or without one, and moves no shelf", async () => {
    const q = word();
    const mine = await persona(creator, `${q} guarded`, { category: "character" });
    const before = await shelfCounts();
    await expectApiError(publish(stranger, mine.id, { category: "roleplay", tags: [], pricing: "free" }), 404, "not_found");
    await expectApiError(publish(stranger, mine.id, { tags: [], pricing: "free" }), 404, "not_found");
    expect(await onShelf("roleplay", q)).toEqual([]);
    expect(await shelfCounts()).toEqual(before);
  });

  it("the SDK publishes to the Roleplay shelf and finds the listing there", async () => {
    const q = word();
    const client = createClient({ baseUrl: service.url, accessToken: creator.accessToken, refreshToken: creator.refreshToken });
    const visitor = createClient({ baseUrl: service.url });
    const mine = await client.personas.create({ name: `${q} Captain`, instructions: "You are a pirate captain.", category: "character" });
    made.push(mine.id);
    const listing = await client.studio.publish(mine.id, { category: "roleplay", tags: ["pirates"], pricing: "free" });
    expect(listing.category).toBe("roleplay");
    const found = await visitor.marketplace.list({ category: "roleplay", q });
    expect(found.data.map((l) => l.id)).toEqual([listing.id]);
    expect((await visitor.marketplace.categories()).data.find((c) => c.slug === "roleplay")!.count).toBeGreaterThanOrEqual(1);
    // Without a category: a companion persona lands on the Companion shelf.
    const friend = await client.personas.create({ name: `${q} Friend`, instructions: "Be warm.", category: "companion" });
    made.push(friend.id);
    expect((await client.studio.publish(friend.id, { tags: [], pricing: "free" })).category).toBe("companion");
    expect((await visitor.marketplace.list({ category: "companion", q })).data).toHaveLength(1);
  });
});
