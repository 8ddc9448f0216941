import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rate } from "../../server/areas/safety/index.ts";
import { expectApiError, expectOk } from "../support/assertions.ts";
import { sendRaw } from "../support/raw.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { OPERATOR, publicPersona, publish, roomyUser, uniqueName } from "./helpers.ts";

// Content ratings (issue 41, item 4): personas and their listings are `general` or `mature`;
// explore, the marketplace (lists, featured, category counts, search), the feed and the
// OpenAI-compatible model list show `general` only unless the account opted in and the server
// allows it; card imports read NSFW tags; an operator may change a rating.
let service: TestService;
let creator: TestUser;
let viewer: TestUser;
const tag = uniqueName("Moonlit").split(" ")[1]!;
let general: { id: string };
let mature: { id: string };
let matureListing: string;
let generalListing: string;

beforeAll(async () => {
  service = await startTestService();
  creator = await roomyUser(service, await registerUser(service));
  viewer = await registerUser(service);
  general = await publicPersona(service, creator, { name: `Moonlit Bard ${tag}` });
  mature = await publicPersona(service, creator, { name: `Moonlit Siren ${tag}`, content_rating: "mature" });
  generalListing = await publish(service, creator, general.id);
  matureListing = await publish(service, creator, mature.id);
  await expectOk(service.clientFor(viewer).POST("/v1/social/follow/{user_id}", { params: { path: { user_id: creator.id } } }));
});
afterAll(async () => {
  await service?.close();
});

/** What each rated list shows `user` of this file's two personas. */
async function listsFor(user: TestUser | undefined) {
  const client = user ? service.clientFor(user) : service.api;
  const ids = (items: { id: string }[]) => items.map((item) => item.id).filter((id) => [general.id, mature.id, generalListing, matureListing].includes(id)).sort();
  const explore = user ? ids((await expectOk(client.GET("/v1/personas/explore", { params: { query: { q: tag } } }))).data) : [];
  const marketplace = ids((await expectOk(client.GET("/v1/marketplace", { params: { query: { q: tag } } }))).data);
  const feed = user ? ids((await expectOk(client.GET("/v1/social/feed", { params: { query: { limit: 100 } } }))).data.map((item) => item.persona)) : [];
  return { explore, marketplace, feed };
}

const only = (...ids: string[]) => [...ids].sort();

describe(`content ratings (${databaseKind})`, () => {
  it("are set by the owner and shown on the persona and its listing", async () => {
    expect((await expectOk(service.clientFor(creator).GET("/v1/personas/{id}", { params: { path: { id: mature.id } } }))).content_rating).toBe("mature");
    expect((await expectOk(service.api.GET("/v1/marketplace/{id}", { params: { path: { id: matureListing } } }))).data.content_rating).toBe("mature");
    expect((await expectOk(service.clientFor(creator).GET("/v1/personas/{id}", { params: { path: { id: general.id } } }))).content_rating).toBe("general");
  });

  it("keep mature content out of every list for an account that did not opt in, and for anonymous callers", async () => {
    expect(await listsFor(viewer)).toEqual({ explore: only(general.id), marketplace: only(generalListing), feed: only(general.id) });
    expect((await listsFor(undefined)).marketplace).toEqual(only(generalListing));
    expect((await expectOk(service.clientFor(viewer).GET("/v1/auth/me/content-settings")))).toEqual({ show_mature: false, mature_allowed: true });
  });

  it("show mature content to an account that opted in", async () => {
    expect(await expectOk(service.clientFor(viewer).PUT("/v1/auth/me/content-settings", { body: { show_mature: true } }))).toEqual({ show_mature: true, mature_allowed: true });
    expect(await listsFor(viewer)).toEqual({ explore: only(general.id, mature.id), marketplace: only(generalListing, matureListing), feed: only(general.id, mature.id) });
    // An opted-in caller of the anonymous marketplace reads, with its credential, sees them too.
    const categories = async (user?: TestUser) => (await expectOk((user ? service.clientFor(user) : service.api).GET("/v1/marketplace/categories"))).data.find((c) => c.slug === "education")!.count;
    expect((await categories(viewer)) - (await categories())).toBeGreaterThanOrEqual(1);
    await expectOk(service.clientFor(viewer).PUT("/v1/auth/me/content-settings", { body: { show_mature: false } }));
    expect((await listsFor(viewer)).explore).toEqual(only(general.id));
  });

  it("leave a mature persona readable by id: ratings filter lists, not reads", async () => {
    await expectOk(service.clientFor(viewer).GET("/v1/personas/{id}", { params: { path: { id: mature.id } } }));
  });

  it("filter the OpenAI-compatible model list the same way", async () => {
    const models = async () => (await expectOk(service.clientFor(creator).GET("/openai/v1/models"))).data.map((m) => m.id);
    const listed = await models();
    expect(listed.some((id) => id.includes(`moonlit-siren`))).toBe(false);
    expect(listed.some((id) => id.includes(`moonlit-bard`))).toBe(true);
    await expectOk(service.clientFor(creator).PUT("/v1/auth/me/content-settings", { body: { show_mature: true } }));
    expect((await models()).some((id) => id.includes(`moonlit-siren`))).toBe(true);
  });

  it("can be changed by an operator; the listing follows", async () => {
    await rate(service.services, general.id, "mature", OPERATOR);
    expect((await expectOk(service.api.GET("/v1/marketplace/{id}", { params: { path: { id: generalListing } } }))).data.content_rating).toBe("mature");
    expect((await listsFor(viewer)).marketplace).toEqual([]);
    await rate(service.services, general.id, "general", OPERATOR);
    expect((await listsFor(viewer)).marketplace).toEqual(only(generalListing));
    await expect(rate(service.services, "0193a6c4-0000-7000-8000-000000000000", "general", OPERATOR)).rejects.toMatchObject({ status: 404 });
  });

  it("refuse an unknown rating (400)", async () => {
    const refused = await sendRaw(service, "POST", "/v1/personas", { body: { name: "Odd", instructions: "x", content_rating: "spicy" }, headers: creator.auth });
    expect(refused.status).toBe(400);
  });

  it("are imported from a card's NSFW tags", async () => {
    const card = (tags: string[]) =>
      JSON.stringify({ spec: "chara_card_v2", spec_version: "2.0", data: { name: `Card ${tags.join("-") || "plain"}`, description: "A card.", personality: "", scenario: "", first_mes: "Hi.", mes_example: "", tags } });
    const imported = async (tags: string[]) => {
      const form = new FormData();
      form.append("file", new Blob([card(tags)], { type: "application/json" }), "card.json");
      const response = await service.fetch("/v1/personas/import", { method: "POST", headers: creator.auth, body: form });
      expect(response.status).toBe(201);
      return (await response.json()) as { id: string; content_rating: string };
    };
    expect((await imported(["fantasy", "NSFW"])).content_rating).toBe("mature");
    expect((await imported(["fantasy"])).content_rating).toBe("general");
    // A mature persona's card carries the marker back out.
    const exported = await service.fetch(`/v1/personas/${mature.id}/card`, { headers: creator.auth });
    expect(((await exported.json()) as { data: { tags: string[] } }).data.tags).toContain("NSFW");
  });
});

describe(`mature content switched off by the operator (${databaseKind})`, () => {
  let off: TestService;
  beforeAll(async () => {
    off = await startTestService({ env: { MATURE_CONTENT: "off" } });
  });
  afterAll(async () => {
    await off?.close();
  });

  it("shows general content only, and refuses an opt-in (409)", async () => {
    const maker = await registerUser(off);
    const fan = await registerUser(off);
    const word = uniqueName("Ember").split(" ")[1]!;
    const hot = await publicPersona(off, maker, { name: `Ember ${word}`, content_rating: "mature" });
    await expectApiError(off.clientFor(fan).PUT("/v1/auth/me/content-settings", { body: { show_mature: true } }), 409, "conflict");
    expect(await expectOk(off.clientFor(fan).GET("/v1/auth/me/content-settings"))).toEqual({ show_mature: false, mature_allowed: false });
    await off.services.db.knex("users").where({ id: fan.id }).update({ show_mature: true });
    const found = await expectOk(off.clientFor(fan).GET("/v1/personas/explore", { params: { query: { q: word } } }));
    expect(found.data.map((p) => p.id)).not.toContain(hot.id);
  });
});
