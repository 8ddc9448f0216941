import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";
import { call, deleteAccount, makePersona } from "./helpers.ts";

// Follows, the follower and following lists, public profiles and user search.
let service: TestService;
// A clock that moves one second per follow, so "most recent first" has distinct times.
let clock = new Date();
const tick = () => (clock = new Date(clock.getTime() + 1000));

const register = (username: string) => registerUser(service, { username, email: `${username}@example.com` });
const setDisplayName = (user: TestUser, display_name: string) =>
  service.services.db.knex("users").where({ id: user.id }).update({ display_name });

beforeAll(async () => {
  service = await startTestService({ now: () => clock, env: { RATE_LIMIT_PER_MINUTE: "100000" } });
});

afterAll(async () => {
  await service?.close();
});

describe("follow and unfollow", () => {
  let fan: TestUser;
  let star: TestUser;
  beforeAll(async () => {
    [fan, star] = [await register("fan_one"), await register("star_one")];
  });

  it("follows a user and answers the same follow record when asked again", async () => {
    tick();
    const first = await call(service, fan, "POST", `/v1/social/follow/${star.id}`, 200);
    expect(first).toEqual({ id: expect.any(String), follower_id: fan.id, following_id: star.id, created_at: clock.toISOString() });
    tick();
    expect(await call(service, fan, "POST", `/v1/social/follow/${star.id}`, 200)).toEqual(first);
    expect(await service.services.db.knex("follows").where({ follower_id: fan.id })).toHaveLength(1);
  });

  it("refuses to follow yourself or a malformed id with 400, an unknown id with 404", async () => {
    const self = await expectError(await service.fetch(`/v1/social/follow/${fan.id}`, { method: "POST", headers: fan.auth }), 400, "invalid_request");
    expect(self.error.details.errors[0].path).toBe("/path/user_id");
    await expectError(await service.fetch(`/v1/social/follow/${fan.id.toUpperCase()}`, { method: "POST", headers: fan.auth }), 400, "invalid_request");
    await expectError(await service.fetch(`/v1/social/follow/${randomUUID()}`, { method: "POST", headers: fan.auth }), 404, "not_found");
    await expectError(await service.fetch("/v1/social/follow/not-a-user", { method: "POST", headers: fan.auth }), 400, "invalid_request");
  });

  it("unfollows with 204, whether or not a follow existed (400 for a malformed id)", async () => {
    const other = await register("other_one");
    await call(service, other, "POST", `/v1/social/follow/${star.id}`, 200);
    for (let i = 0; i < 2; i++) {
      const response = await service.fetch(`/v1/social/follow/${star.id}`, { method: "DELETE", headers: other.auth });
      expect(response.status).toBe(204);
      expect(await response.text()).toBe("");
    }
    expect((await service.fetch(`/v1/social/follow/${randomUUID()}`, { method: "DELETE", headers: other.auth })).status).toBe(204);
    // A malformed id is refused by the contract (format uuid), like every other id.
    await expectError(await service.fetch("/v1/social/follow/nobody", { method: "DELETE", headers: other.auth }), 400, "invalid_request");
    expect(await service.services.db.knex("follows").where({ follower_id: other.id })).toEqual([]);
  });

  it("needs the admin scope to write, personas:read to read", async () => {
    const key = await apiKeyFor(service, fan, ["personas:read"]);
    const headers = { "x-api-key": key };
    await expectError(await service.fetch(`/v1/social/follow/${star.id}`, { method: "POST", headers }), 403, "forbidden");
    await expectError(await service.fetch(`/v1/social/follow/${star.id}`, { method: "DELETE", headers }), 403, "forbidden");
    expect((await service.fetch("/v1/social/following", { headers })).status).toBe(200);
    expect((await service.fetch(`/v1/social/profile/${star.id}`, { headers })).status).toBe(200);
    expect((await service.fetch("/v1/social/search?q=star", { headers })).status).toBe(200);
    await expectError(await service.fetch("/v1/social/followers"), 401, "unauthorized");
  });
});

describe("follower and following lists", () => {
  let hub: TestUser;
  const fans: TestUser[] = [];
  beforeAll(async () => {
    hub = await register("hub_user");
    for (let i = 0; i < 5; i++) {
      const fan = await register(`list_fan_${i}`);
      fans.push(fan);
      tick();
      await call(service, fan, "POST", `/v1/social/follow/${hub.id}`, 200);
      tick();
      await call(service, hub, "POST", `/v1/social/follow/${fan.id}`, 200);
    }
  });

  it("lists followers most recent first with exactly the entry fields, and whom the caller follows", async () => {
    await service.services.db.knex("users").where({ id: fans[4]!.id }).update({ avatar_url: "https://cdn.example/a.png" });
    const followers = await call(service, hub, "GET", "/v1/social/followers", 200);
    expect(followers).toMatchObject({ total: 5, limit: 20, offset: 0 });
    expect(followers.data.map((row: { id: string }) => row.id)).toEqual(fans.map((fan) => fan.id).reverse());
    expect(followers.data[0]).toEqual({ id: fans[4]!.id, username: "list_fan_4", avatar_url: "https://cdn.example/a.png", followed_at: expect.any(String) });
    expect(JSON.stringify(followers)).not.toContain("@example.com");
    const following = await call(service, hub, "GET", "/v1/social/following", 200);
    expect(following.data.map((row: { id: string }) => row.id)).toEqual(fans.map((fan) => fan.id).reverse());
    const fanView = await call(service, fans[0]!, "GET", "/v1/social/following", 200);
    expect(fanView.data.map((row: { username: string }) => row.username)).toEqual(["hub_user"]);
  });

  it("pages stably with the total on each page", async () => {
    const all = (await call(service, hub, "GET", "/v1/social/followers?limit=100", 200)).data.map((row: { id: string }) => row.id);
    const paged: string[] = [];
    for (let offset = 0; offset < 5; offset += 2) {
      const page = await call(service, hub, "GET", `/v1/social/followers?limit=2&offset=${offset}`, 200);
      expect(page).toMatchObject({ total: 5, limit: 2, offset });
      paged.push(...page.data.map((row: { id: string }) => row.id));
    }
    expect(paged).toEqual(all);
    expect(await call(service, hub, "GET", "/v1/social/following?offset=50", 200)).toEqual({ data: [], total: 5, limit: 20, offset: 50 });
  });

  it("refuses limits outside 1..100 and negative offsets", async () => {
    for (const path of ["/v1/social/followers", "/v1/social/following"]) {
      for (const query of ["?limit=0", "?limit=101", "?offset=-1", "?limit=x", "?sort=name"]) {
        await expectError(await service.fetch(`${path}${query}`, { headers: hub.auth }), 400, "invalid_request");
      }
      expect((await call(service, hub, "GET", `${path}?limit=100`, 200)).limit).toBe(100);
    }
  });
});

describe("public profile", () => {
  it("shows public personas only and exact counts, never the e-mail", async () => {
    const maker = await register("maker_one");
    await service.services.db.knex("users").where({ id: maker.id }).update({ plan: "creator", bio: "I make things." });
    await makePersona(service, maker, "Open One");
    await makePersona(service, maker, "Open Two");
    await makePersona(service, maker, "Closed", { is_public: false });
    const viewer = await register("viewer_one");
    await call(service, viewer, "POST", `/v1/social/follow/${maker.id}`, 200);
    await call(service, maker, "POST", `/v1/social/follow/${viewer.id}`, 200);
    const body = await call(service, viewer, "GET", `/v1/social/profile/${maker.id}`, 200);
    expect(body).toEqual({
      id: maker.id,
      username: "maker_one",
      bio: "I make things.",
      avatar_url: null,
      persona_count: 2,
      follower_count: 1,
      following_count: 1,
      created_at: expect.any(String),
    });
    expect((await call(service, maker, "GET", `/v1/social/profile/${maker.id}`, 200)).persona_count).toBe(2);
  });

  it("is 404 for unknown ids and 400 for malformed ones", async () => {
    const viewer = await register("viewer_two");
    await expectError(await service.fetch(`/v1/social/profile/${randomUUID()}`, { headers: viewer.auth }), 404, "not_found");
    await expectError(await service.fetch("/v1/social/profile/x", { headers: viewer.auth }), 400, "invalid_request");
  });

  it("counts 20 concurrent follows of one user exactly, and a fan following 20 times once", async () => {
    const idol = await register("idol_one");
    const crowd = await Promise.all(Array.from({ length: 20 }, (_, i) => register(`crowd_${i}`)));
    await Promise.all(crowd.map((fan) => call(service, fan, "POST", `/v1/social/follow/${idol.id}`, 200)));
    const repeats = await Promise.all(Array.from({ length: 20 }, () => call(service, crowd[0]!, "POST", `/v1/social/follow/${idol.id}`, 200)));
    expect(new Set(repeats.map((follow) => follow.id)).size).toBe(1);
    expect((await call(service, idol, "GET", `/v1/social/profile/${idol.id}`, 200)).follower_count).toBe(20);
    expect((await call(service, idol, "GET", "/v1/social/followers?limit=100", 200)).total).toBe(20);
    expect((await call(service, crowd[1]!, "GET", `/v1/social/profile/${crowd[0]!.id}`, 200)).following_count).toBe(1);
  });
});

describe("deleted accounts", () => {
  it("are 404 everywhere and absent from lists, counts and search, during the grace period", async () => {
    const gone = await register("gone_user");
    const friend = await register("friend_of_gone");
    await call(service, gone, "POST", `/v1/social/follow/${friend.id}`, 200);
    await call(service, friend, "POST", `/v1/social/follow/${gone.id}`, 200);
    await deleteAccount(service, gone);
    await expectError(await service.fetch(`/v1/social/profile/${gone.id}`, { headers: friend.auth }), 404, "not_found");
    await expectError(await service.fetch(`/v1/social/follow/${gone.id}`, { method: "POST", headers: friend.auth }), 404, "not_found");
    expect(await call(service, friend, "GET", "/v1/social/followers", 200)).toMatchObject({ data: [], total: 0 });
    expect(await call(service, friend, "GET", "/v1/social/following", 200)).toMatchObject({ data: [], total: 0 });
    expect(await call(service, friend, "GET", `/v1/social/profile/${friend.id}`, 200)).toMatchObject({ follower_count: 0, following_count: 0 });
    expect((await call(service, friend, "GET", "/v1/social/search?q=gone_user", 200)).total).toBe(0);
  });
});

describe("user search", () => {
  let viewer: TestUser;
  beforeAll(async () => {
    viewer = await register("searcher");
    await register("nova");
    await register("novak_jan");
    await register("casanova");
    await setDisplayName(await register("zed_prime"), "Nova Prime");
    await setDisplayName(await register("xavier_c"), "Villanova fan");
    await register("noxva");
    await setDisplayName(await register("pct_100"), "100% real");
    await setDisplayName(await register("pct_1000"), "1000 real");
    await register("ab_cd");
    await register("abxcd");
    await setDisplayName(await register("bs_one"), "back\\slash");
    await setDisplayName(await register("bs_two"), "backslash");
    // Followers show in the hits.
    const novaUser = await service.services.db.knex("users").where({ username: "nova" }).first();
    for (const fan of [viewer, await register("nova_fan_b")]) {
      await call(service, fan, "POST", `/v1/social/follow/${novaUser.id}`, 200);
    }
  });

  const search = async (query: string) => call(service, viewer, "GET", `/v1/social/search?${query}`, 200);
  const usernames = (body: { data: { username: string }[] }) => body.data.map((hit) => hit.username);

  it("ranks an exact name first, then prefixes, then infixes, over username and display name", async () => {
    for (const q of ["nova", "NOVA", "Nova"]) {
      const body = await search(`q=${q}`);
      const names = usernames(body);
      expect(names[0]).toBe("nova");
      // Prefix matches: username nova*, display name Nova*.
      expect(names.slice(1, 4).sort()).toEqual(["nova_fan_b", "novak_jan", "zed_prime"]);
      // Infixes: casanova, and "Villanova fan" by display name.
      expect(names.slice(4).sort()).toEqual(["casanova", "xavier_c"]);
      expect(body.total).toBe(6);
    }
  });

  it("answers exactly the hit fields with follower counts, and no e-mail", async () => {
    const body = await search("q=nova&limit=1");
    expect(body).toEqual({
      data: [{ id: expect.any(String), username: "nova", avatar_url: null, follower_count: 2 }],
      total: 6,
      limit: 1,
    });
    expect(JSON.stringify(await search("q=example"))).not.toContain("@");
    expect((await search("q=example")).total).toBe(0);
  });

  it("takes %, _ and backslashes literally", async () => {
    expect(usernames(await search(`q=${encodeURIComponent("0%")}`))).toEqual(["pct_100"]);
    expect(usernames(await search(`q=${encodeURIComponent("%%")}`))).toEqual([]);
    expect(usernames(await search("q=b_c"))).toEqual(["ab_cd"]);
    expect(usernames(await search("q=__"))).toEqual([]);
    expect(usernames(await search(`q=${encodeURIComponent("k\\s")}`))).toEqual(["bs_one"]);
    expect(usernames(await search(`q=${encodeURIComponent("\\\\")}`))).toEqual([]);
  });

  it("defaults to 20 hits and accepts up to 50", async () => {
    for (let i = 0; i < 21; i++) await register(`many_${String(i).padStart(2, "0")}`);
    const body = await search("q=many_");
    expect(body.data).toHaveLength(20);
    expect(body).toMatchObject({ total: 21, limit: 20 });
    expect((await search("q=many_&limit=50")).data).toHaveLength(21);
  });

  it("refuses q under 2 characters (spaces aside) or over 100, and limits outside 1..50", async () => {
    for (const query of ["", "q=", "q=a", `q=${encodeURIComponent(" a ")}`, `q=${encodeURIComponent("   ")}`, `q=${"a".repeat(101)}`, "q=ab&limit=0", "q=ab&limit=51", "q=ab&offset=1"]) {
      await expectError(await service.fetch(`/v1/social/search?${query}`, { headers: viewer.auth }), 400, "invalid_request");
    }
    expect((await search(`q=${"a".repeat(100)}`)).data).toEqual([]);
    expect((await search("q=ab&limit=50")).limit).toBe(50);
  });
});
