import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { archiveOf, purgeDeletedAccounts } from "../support/account-data.ts";
import { nonCascadingUserReferences } from "../../server/areas/auth/users/store.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { call, deleteAccount, makePersona } from "./helpers.ts";

// The data export carries the user's follows, likes and share links; the account purge removes
// every social row of the account, in both directions.
let service: TestService;
let clock = new Date();
const DAY_MS = 24 * 60 * 60 * 1000;
let alice: TestUser;
let bob: TestUser;
let bobPersona: { id: string };
let alicePersona: { id: string };

beforeAll(async () => {
  service = await startTestService({ now: () => clock });
  [alice, bob] = [await registerUser(service), await registerUser(service)];
  bobPersona = await makePersona(service, bob, "Bob Public");
  alicePersona = await makePersona(service, alice, "Alice Public");
  await call(service, alice, "POST", `/v1/social/follow/${bob.id}`, 200);
  await call(service, bob, "POST", `/v1/social/follow/${alice.id}`, 200);
  await call(service, alice, "POST", `/v1/social/likes/${bobPersona.id}`, 200);
  await call(service, bob, "POST", `/v1/social/likes/${alicePersona.id}`, 200);
  await call(service, alice, "POST", `/v1/social/share/${bobPersona.id}`, 200, { platform: "forum" });
  await call(service, bob, "POST", `/v1/social/share/${alicePersona.id}`, 200, { platform: "link" });
  await call(service, bob, "POST", `/v1/social/share/${bobPersona.id}`, 200, { platform: "link" });
});

afterAll(async () => {
  await service?.close();
});

describe("account data", () => {
  it("exports whom the user follows, what they like and the links they shared", async () => {
    const archive = (await archiveOf(service.services, alice.id)) as Record<string, unknown> & { follows: Record<string, unknown>[]; likes: Record<string, unknown>[] };
    expect(archive.follows).toEqual([{ id: expect.any(String), follower_id: alice.id, following_id: bob.id, created_at: expect.any(String) }]);
    expect(archive.likes).toEqual([{ id: expect.any(String), user_id: alice.id, persona_id: bobPersona.id, created_at: expect.any(String) }]);
    expect(archive.shares).toEqual([
      expect.objectContaining({ user_id: alice.id, persona_id: bobPersona.id, platform: "forum", code: expect.any(String), open_count: expect.anything() }),
    ]);
  });

  it("purges every social row of the account after the grace period, in both directions", async () => {
    expect(await nonCascadingUserReferences(service.services.db.knex)).toEqual([]);
    await deleteAccount(service, alice);
    clock = new Date(clock.getTime() + 31 * DAY_MS);
    await purgeDeletedAccounts(service.services);
    const { knex } = service.services.db;
    expect(await knex("users").where({ id: alice.id }).first()).toBeUndefined();
    expect(await knex("follows").where({ follower_id: alice.id }).orWhere({ following_id: alice.id })).toEqual([]);
    expect(await knex("likes").where({ user_id: alice.id }).orWhere({ persona_id: alicePersona.id })).toEqual([]);
    expect(await knex("persona_shares").where({ user_id: alice.id }).orWhere({ persona_id: alicePersona.id })).toEqual([]);
    // What is Bob's alone stays.
    expect(await knex("persona_shares").where({ user_id: bob.id })).toEqual([expect.objectContaining({ persona_id: bobPersona.id })]);
  });
});
