import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { refreshTrending, TRENDING_MIN_MESSAGES } from "../../server/areas/personas/trending.ts";
import { shareOpens } from "../../server/areas/social/service.ts";
import { shareOpenCounter } from "../../server/areas/social/share-opens.ts";
import { expectError } from "../support/assertions.ts";
import { sendRaw } from "../support/raw.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { call, deleteAccount, makePersona, messagesFor } from "./helpers.ts";

// Likes, the activity feed (with the trending set) and share links.
let service: TestService;
let clock = new Date();
const tick = () => (clock = new Date(clock.getTime() + 1000));

async function creator(): Promise<TestUser> {
  const user = await registerUser(service);
  await service.services.db.knex("users").where({ id: user.id }).update({ plan: "creator" });
  return user;
}

beforeAll(async () => {
  // No automatic avatars: the feed items are compared whole, avatar_url included.
  service = await startTestService({ now: () => clock, env: { RATE_LIMIT_PER_MINUTE: "100000", AUTO_AVATARS: "false" } });
});

afterAll(async () => {
  await service?.close();
});

describe("likes", () => {
  let owner: TestUser;
  let fan: TestUser;
  let open: { id: string };
  let secret: { id: string };
  beforeAll(async () => {
    [owner, fan] = [await creator(), await creator()];
    open = await makePersona(service, owner, "Open Persona", { avatar_url: "https://cdn.example/p.png" });
    secret = await makePersona(service, owner, "Secret Persona", { is_public: false });
  });

  it("likes a persona the caller can see, and answers the same like when asked again", async () => {
    tick();
    const like = await call(service, fan, "POST", `/v1/social/likes/${open.id}`, 200);
    expect(like).toEqual({ id: expect.any(String), user_id: fan.id, persona_id: open.id, created_at: clock.toISOString() });
    tick();
    expect(await call(service, fan, "POST", `/v1/social/likes/${open.id}`, 200)).toEqual(like);
    // Their own private persona is one they can see.
    await call(service, owner, "POST", `/v1/social/likes/${secret.id}`, 200);
  });

  it("is 404 for another user's private persona and unknown ids, 400 for a malformed one", async () => {
    await expectError(await service.fetch(`/v1/social/likes/${secret.id}`, { method: "POST", headers: fan.auth }), 404, "not_found");
    await expectError(await service.fetch(`/v1/social/likes/${randomUUID()}`, { method: "POST", headers: fan.auth }), 404, "not_found");
    await expectError(await service.fetch("/v1/social/likes/not-a-uuid", { method: "POST", headers: fan.auth }), 400, "invalid_request");
    await expectError(await service.fetch("/v1/social/likes/not-a-uuid", { method: "DELETE", headers: fan.auth }), 400, "invalid_request");
    expect(await service.services.db.knex("likes").where({ persona_id: secret.id, user_id: fan.id })).toEqual([]);
  });

  it("lists liked personas most recent first with exactly the entry fields, hiding ones no longer visible", async () => {
    const second = await makePersona(service, owner, "Second Persona");
    tick();
    await call(service, fan, "POST", `/v1/social/likes/${second.id}`, 200);
    const body = await call(service, fan, "GET", "/v1/social/likes", 200);
    expect(body).toMatchObject({ total: 2, limit: 20, offset: 0 });
    expect(body.data.map((row: { name: string }) => row.name)).toEqual(["Second Persona", "Open Persona"]);
    expect(body.data[1]).toEqual({
      persona_id: open.id,
      name: "Open Persona",
      tagline: "Open Persona, described.",
      avatar_url: "https://cdn.example/p.png",
      creator: { id: owner.id, username: owner.username },
      liked_at: expect.any(String),
    });
    const page = await call(service, fan, "GET", "/v1/social/likes?limit=1&offset=1", 200);
    expect(page).toMatchObject({ total: 2, limit: 1, offset: 1, data: [{ persona_id: open.id }] });

    await call(service, owner, "PUT", `/v1/personas/${second.id}`, 200, { is_public: false });
    expect((await call(service, fan, "GET", "/v1/social/likes", 200)).data.map((row: { name: string }) => row.name)).toEqual(["Open Persona"]);
    expect((await call(service, owner, "GET", "/v1/social/likes", 200)).data.map((row: { name: string }) => row.name)).toEqual(["Secret Persona"]);
    for (const query of ["?limit=0", "?limit=101", "?offset=-1"]) {
      await expectError(await service.fetch(`/v1/social/likes${query}`, { headers: fan.auth }), 400, "invalid_request");
    }
  });

  it("unlikes with success, whether or not there was a like", async () => {
    const third = await makePersona(service, owner, "Third Persona");
    await call(service, fan, "POST", `/v1/social/likes/${third.id}`, 200);
    for (const id of [third.id, third.id, randomUUID()]) {
      expect(await call(service, fan, "DELETE", `/v1/social/likes/${id}`, 200)).toEqual({ success: true });
    }
    expect(await service.services.db.knex("likes").where({ persona_id: third.id })).toEqual([]);
  });

  it("removes a persona's likes with the persona", async () => {
    const doomed = await makePersona(service, owner, "Doomed Persona");
    await call(service, fan, "POST", `/v1/social/likes/${doomed.id}`, 200);
    await call(service, owner, "DELETE", `/v1/personas/${doomed.id}`, 200);
    expect(await service.services.db.knex("likes").where({ persona_id: doomed.id })).toEqual([]);
  });
});

describe("feed", () => {
  let viewer: TestUser;
  let ann: TestUser;
  let ben: TestUser;
  let carl: TestUser;
  const ids: Record<string, string> = {};

  const feed = async (query = "", user = viewer) => call(service, user, "GET", `/v1/social/feed${query}`, 200);
  // The service is lent: personas of other files may trend too. The feed is read whole (they are at
  // most a hundred) and its items of this file's personas are checked.
  type Item = { persona: { id: string; name: string }; trending_since?: string };
  const ours = <T extends Item>(body: { data: T[] }) => body.data.filter((item) => Object.values(ids).includes(item.persona.id));
  const names = (body: { data: Item[] }) => ours(body).map((item) => item.persona.name);
  /** Which of this file's personas are in the trending set. */
  const trendingOfOurs = async () => (await service.services.db.knex("persona_trending").whereIn("persona_id", Object.values(ids)).pluck("persona_id")).sort();

  beforeAll(async () => {
    [viewer, ann, ben, carl] = [await creator(), await creator(), await creator(), await creator()];
    for (const [user, name, fields] of [
      [ann, "Ann One", {}],
      [ann, "Ann Private", { is_public: false }],
      [ben, "Ben One", {}],
      [carl, "Carl Hot", {}],
      [ann, "Ann Hot", {}],
      [carl, "Carl Quiet", {}],
    ] as const) {
      tick();
      ids[name] = (await makePersona(service, user, name, fields)).id;
    }
    await call(service, viewer, "POST", `/v1/social/follow/${ann.id}`, 200);
    await call(service, viewer, "POST", `/v1/social/follow/${ben.id}`, 200);
    // Carl Hot and Ann Hot trend (Ann Hot is also followed: it must show once); Ann Private would, but is private.
    tick();
    await messagesFor(service, viewer, ids["Carl Hot"]!, TRENDING_MIN_MESSAGES + 5, clock);
    await messagesFor(service, viewer, ids["Ann Hot"]!, TRENDING_MIN_MESSAGES, clock);
    await messagesFor(service, viewer, ids["Ann Private"]!, TRENDING_MIN_MESSAGES + 50, clock);
    await messagesFor(service, viewer, ids["Carl Quiet"]!, TRENDING_MIN_MESSAGES - 1, clock);
    tick();
    await refreshTrending(service.services);
    expect(await trendingOfOurs()).toEqual([ids["Carl Hot"], ids["Ann Hot"]].sort());
  });

  it("mixes followed users' new public personas with trending ones, newest first, each once", async () => {
    const body = await feed("?limit=100");
    expect(body).toMatchObject({ total: body.data.length, limit: 100, offset: 0 });
    // Ann Hot was published before it started trending: it shows as trending, once.
    expect(names(body)).toEqual(["Ann Hot", "Carl Hot", "Ben One", "Ann One"]);
    const [annHot, , benOne] = ours(body);
    expect(annHot).toEqual({
      type: "trending",
      persona: { id: ids["Ann Hot"], name: "Ann Hot", tagline: "Ann Hot, described.", avatar_url: null, like_count: 0 },
      creator: { id: ann.id, username: ann.username },
      trending_since: clock.toISOString(),
    });
    expect(benOne).toEqual({
      type: "new_persona",
      persona: { id: ids["Ben One"], name: "Ben One", tagline: "Ben One, described.", avatar_url: null, like_count: 0 },
      creator: { id: ben.id, username: ben.username },
      published_at: expect.any(String),
    });
    expect(JSON.stringify(body)).not.toContain("Ann Private");
  });

  it("shows trending personas to someone who follows nobody", async () => {
    expect(names(await feed("?limit=100", carl))).toEqual(["Ann Hot", "Carl Hot"]);
  });

  it("counts 20 concurrent likes of a persona exactly", async () => {
    const fans = await Promise.all(Array.from({ length: 20 }, () => registerUser(service)));
    await Promise.all(fans.map((fan) => call(service, fan, "POST", `/v1/social/likes/${ids["Ben One"]}`, 200)));
    await Promise.all(fans.slice(0, 5).map((fan) => call(service, fan, "POST", `/v1/social/likes/${ids["Ben One"]}`, 200)));
    const item = (await feed("?limit=100")).data.find((row: { persona: { id: string } }) => row.persona.id === ids["Ben One"]);
    expect(item.persona.like_count).toBe(20);
    await deleteAccount(service, fans[0]!);
    const after = (await feed("?limit=100")).data.find((row: { persona: { id: string } }) => row.persona.id === ids["Ben One"]);
    expect(after.persona.like_count).toBe(19);
  });

  it("pages stably without duplicates", async () => {
    const all = (await feed("?limit=100")).data.map((item: { persona: { id: string } }) => item.persona.id);
    expect(new Set(all).size).toBe(all.length);
    const paged: string[] = [];
    for (let offset = 0; offset < all.length; offset++) {
      const page = await feed(`?limit=1&offset=${offset}`);
      expect(page).toMatchObject({ total: all.length, limit: 1, offset });
      paged.push(page.data[0].persona.id);
    }
    expect(paged).toEqual(all);
    expect(await feed(`?offset=${all.length}`)).toEqual({ data: [], total: all.length, limit: 20, offset: all.length });
    for (const query of ["?limit=0", "?limit=101", "?offset=-1"]) {
      await expectError(await service.fetch(`/v1/social/feed${query}`, { headers: viewer.auth }), 400, "invalid_request");
    }
  });

  it("shows a persona made public again as new, keeps trending_since across refreshes, drops what left", async () => {
    const before = ours(await feed("?limit=100"))[0]!.trending_since;
    tick();
    await refreshTrending(service.services);
    expect(ours(await feed("?limit=100"))[0]!.trending_since).toBe(before);

    await call(service, ben, "PUT", `/v1/personas/${ids["Ben One"]}`, 200, { is_public: false });
    expect(names(await feed("?limit=100"))).not.toContain("Ben One");
    tick();
    await call(service, ben, "PUT", `/v1/personas/${ids["Ben One"]}`, 200, { is_public: true });
    const first = ours(await feed("?limit=100"))[0];
    expect(first).toMatchObject({ type: "new_persona", persona: { name: "Ben One" }, published_at: clock.toISOString() });

    // Eight days on, nothing of this file trends any more.
    // (Session tokens would expire on the way: the clock goes back before the feed is read.)
    clock = new Date(clock.getTime() + 8 * 24 * 3_600_000);
    await refreshTrending(service.services);
    expect(await trendingOfOurs()).toEqual([]);
    clock = new Date(clock.getTime() - 8 * 24 * 3_600_000);
    expect(names(await feed("?limit=100", carl))).toEqual([]);
  });

  it("drops the personas of a deleted creator", async () => {
    await deleteAccount(service, ann);
    expect(names(await feed("?limit=100"))).toEqual(["Ben One"]);
  });
});

describe("share links", () => {
  let owner: TestUser;
  let other: TestUser;
  let open: { id: string };
  let secret: { id: string };
  beforeAll(async () => {
    [owner, other] = [await creator(), await creator()];
    open = await makePersona(service, owner, "Shared Persona");
    secret = await makePersona(service, owner, "Unshared Persona", { is_public: false });
  });

  const share = (user: TestUser, personaId: string, platform: string, status = 200) =>
    call(service, user, "POST", `/v1/social/share/${personaId}`, status, { platform });
  const codeOf = (url: string) => new URL(url).pathname.split("/").pop()!;
  const openLink = (code: string) => service.fetch(`/v1/shares/${code}`, { redirect: "manual" });

  it("makes a short unguessable link per persona and platform, the same one when asked again", async () => {
    const first = await share(other, open.id, "microblog");
    expect(first).toEqual({ share_url: expect.any(String), platform: "microblog", persona_id: open.id, expires_at: null });
    expect(first.share_url).toMatch(new RegExp(`^${service.url}/v1/shares/[A-Za-z0-9_-]{12}$`));
    // 12 base64url characters are 72 random bits.
    expect(codeOf(first.share_url).length * 6).toBeGreaterThanOrEqual(64);
    expect(await share(other, open.id, "microblog")).toEqual(first);
    const codes = new Set([first, await share(other, open.id, "forum"), await share(other, open.id, "link"), await share(owner, open.id, "microblog")].map((row) => codeOf(row.share_url)));
    expect(codes.size).toBe(4);
  });

  it("is 404 for a persona the caller cannot see, 400 for a bad body", async () => {
    const shareAs = (personaId: string) => service.clientFor(other).POST("/v1/social/share/{persona_id}", { params: { path: { persona_id: personaId } }, body: { platform: "link" } });
    await expectError(await shareAs(secret.id), 404, "not_found");
    await expectError(await shareAs(randomUUID()), 404, "not_found");
    for (const body of [{}, { platform: "fax" }, { platform: 3 }]) {
      await expectError(await sendRaw(service, "POST", `/v1/social/share/${open.id}`, { body, headers: other.auth }), 400, "invalid_request");
    }
    await expectError(await shareAs("nope"), 400, "invalid_request");
    expect(await service.services.db.knex("persona_shares").where({ persona_id: secret.id })).toEqual([]);
  });

  it("redirects to the persona's public page without credentials and counts each open per platform", async () => {
    const forum = codeOf((await share(other, open.id, "forum")).share_url);
    const link = codeOf((await share(other, open.id, "link")).share_url);
    const base = (await shareOpens(service.services, open.id));
    for (let i = 0; i < 5; i++) {
      const response = await openLink(forum);
      expect(response.status).toBe(302);
      expect(response.headers.get("location")).toBe(`${service.url}/p/${open.id}`);
      expect(response.headers.get("x-ratelimit-limit")).toBeTruthy();
      expect(await response.text()).toBe("");
    }
    await Promise.all(Array.from({ length: 10 }, () => openLink(link)));
    await shareOpenCounter(service.services).settled();
    const opens = await shareOpens(service.services, open.id);
    expect(opens.get("forum")).toBe((base.get("forum") ?? 0) + 5);
    expect(opens.get("link")).toBe((base.get("link") ?? 0) + 10);
  });

  it("answers 404 with the envelope for unknown, expired and no-longer-public links, 400 for malformed codes", async () => {
    await expectError(await openLink("AAAAAAAAAAAA"), 404, "not_found");
    const expiring = codeOf((await share(owner, open.id, "forum")).share_url);
    await service.services.db.knex("persona_shares").where({ code: expiring }).update({ expires_at: new Date(clock.getTime() - 1000) });
    await expectError(await openLink(expiring), 404, "not_found");
    // Asking again gives a working link, not the expired one.
    const fresh = codeOf((await share(owner, open.id, "forum")).share_url);
    expect(fresh).not.toBe(expiring);
    expect((await openLink(fresh)).status).toBe(302);

    const ownPrivate = codeOf((await share(owner, secret.id, "link")).share_url);
    await expectError(await openLink(ownPrivate), 404, "not_found");
    await call(service, owner, "PUT", `/v1/personas/${secret.id}`, 200, { is_public: true });
    expect((await openLink(ownPrivate)).status).toBe(302);

    for (const code of ["a.b", "x".repeat(65), "%20"]) await expectError(await openLink(code), 400, "invalid_request");
  });
});
