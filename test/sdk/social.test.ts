// The SDK's social helpers against the real service.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { BadRequestError, createClient, NotFoundError } from "../../sdk/src/index.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service?.close();
});

describe("client.social", () => {
  test("follows, searches, likes, reads the feed and shares", { timeout: 120_000 }, async () => {
    const [star, fan] = [await registerUser(service, { username: "sdk_star" }), await registerUser(service)];
    const starClient = createClient({ baseUrl: service.url, accessToken: star.accessToken, refreshToken: star.refreshToken });
    const client = createClient({ baseUrl: service.url, accessToken: fan.accessToken, refreshToken: fan.refreshToken });
    const persona = await starClient.personas.create({ name: "Nova", instructions: "Be brief.", is_public: true, greeting_message: "Hi." });

    const follow = await client.social.follow(star.id);
    expect(follow).toMatchObject({ follower_id: fan.id, following_id: star.id });
    expect((await client.social.following()).data.map((entry) => entry.username)).toEqual(["sdk_star"]);
    expect((await starClient.social.followers()).total).toBe(1);
    expect(await client.social.profile(star.id)).toMatchObject({ username: "sdk_star", follower_count: 1, persona_count: 1 });
    expect((await client.social.search("sdk_st", { limit: 5 })).data.map((hit) => hit.username)).toEqual(["sdk_star"]);

    await client.social.like(persona.id);
    const liked: string[] = [];
    for await (const entry of client.social.likes()) liked.push(entry.name);
    expect(liked).toEqual(["Nova"]);
    const feed = await client.social.feed({ limit: 5 });
    expect(feed.data).toMatchObject([{ type: "new_persona", persona: { id: persona.id, like_count: 1 } }]);
    expect(await client.social.unlike(persona.id)).toEqual({ success: true });

    const { share_url } = await client.social.share(persona.id, { platform: "link" });
    expect((await fetch(share_url, { redirect: "manual" })).status).toBe(302);

    await expect(client.social.unfollow(star.id)).resolves.toBeUndefined();
    await expect(client.social.follow(fan.id)).rejects.toBeInstanceOf(BadRequestError);
    await expect(client.social.profile("0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01")).rejects.toBeInstanceOf(NotFoundError);
  });
});
