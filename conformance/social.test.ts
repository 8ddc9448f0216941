import { beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { createPersona, registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { idOr, PLACEHOLDER_ID } from "./support/placeholders.ts";
import { target } from "./support/target.ts";

describe("social", () => {
  let creator: TestUser;
  let fan: TestUser;
  let personaId: string | undefined;
  let shareCode: string | undefined;

  beforeAll(async () => {
    [creator, fan] = await Promise.all([registerUser("star"), registerUser("fan")]);
    personaId = await createPersona(creator);
  });

  op("social_follow", async () => {
    await call("social_follow", { token: fan.token, path: { user_id: creator.id }, expect: [200] });
  });

  op("social_followers", async () => {
    const answer = await call("social_followers", { token: creator.token, query: { limit: 10 }, expect: [200] });
    if (target.stateful) expect(JSON.stringify(answer.json)).toContain(fan.id);
  });

  op("social_following", async () => {
    const answer = await call("social_following", { token: fan.token, query: { limit: 10 }, expect: [200] });
    if (target.stateful) expect(JSON.stringify(answer.json)).toContain(creator.id);
  });

  op("social_like", async () => {
    await call("social_like", { token: fan.token, path: { persona_id: idOr(personaId) }, expect: [200] });
  });

  op("social_likes", async () => {
    const answer = await call("social_likes", { token: fan.token, query: { limit: 10 }, expect: [200] });
    if (target.stateful && personaId) expect(JSON.stringify(answer.json)).toContain(personaId);
  });

  op("social_unlike", async () => {
    await call("social_unlike", { token: fan.token, path: { persona_id: idOr(personaId) }, expect: [200] });
  });

  op("social_profile", async () => {
    const answer = await call("social_profile", { token: fan.token, path: { user_id: creator.id }, expect: [200] });
    if (target.stateful) expect(answer.json).toMatchObject({ username: creator.username });
  });

  op("social_search", async () => {
    await call("social_search", { token: fan.token, query: { q: creator.username.slice(0, 8), limit: 5 }, expect: [200] });
  });

  op("social_feed", async () => {
    // The fan follows the creator, whose public persona is therefore in the fan's feed.
    const answer = await call("social_feed", { token: fan.token, query: { limit: 10 }, expect: [200] });
    if (target.stateful && personaId) expect(JSON.stringify(answer.json)).toContain(personaId);
  });

  op("social_share", async () => {
    const answer = await call("social_share", { token: creator.token, path: { persona_id: idOr(personaId) }, json: { platform: "link" }, expect: [200] });
    const url = (answer.json as { share_url?: string }).share_url;
    shareCode = url ? new URL(url).pathname.split("/").pop() : undefined;
  });

  op("social_open_share", async () => {
    // Without a link of our own the code is one no server issued: 404 on a server, 302 on the mock.
    const answer = await call("social_open_share", { path: { code: shareCode ?? PLACEHOLDER_ID }, expect: [302] });
    if (answer.status === 302) expect(answer.headers.get("location")).toBeTruthy();
    // A code no server issued: 404 with the error envelope on a real server.
    if (target.stateful) await call("social_open_share", { path: { code: "AAAAAAAAAAAA" }, expect: [404] });
  });

  op("social_unfollow", async () => {
    await call("social_unfollow", { token: fan.token, path: { user_id: creator.id }, expect: [204] });
  });
});
