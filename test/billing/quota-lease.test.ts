import { describe, expect, it } from "vitest";
import { billingTasks } from "../../server/areas/billing/jobs.ts";
import { reserveMessage } from "../../server/quota/usage.ts";
import { replyTables } from "../../server/areas.ts";
import { QUOTA_RELEASE_TASK, releaseExpiredLeases } from "../../server/quota/usage-store.ts";
import { databaseKind } from "../support/service.ts";
import { useTestService } from "../support/fixtures.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// The quota lease (docs/adr/0096-quota-across-a-crash-a-durable-lease-per-reserved-message.md, "Resilience"): every reserved message has a lease recorded by
// the reserving statement; once it expires, the sweep gives the message back, exactly once, unless
// its reply was stored. A send that fails gives it back itself and ends the lease. The process-crash
// case is test/resilience/api-kill.e2e.test.ts; here a lease is expired by hand and the sweep run as a
// worker process runs it.
const fixture = useTestService({ env: { QUOTA_LEASE_SECONDS: "600" } });

const knex = () => fixture.service.services.db.knex;
const used = async (user: TestUser) => Number((await knex()("usage_counters").where({ user_id: user.id }).sum("messages_sent as n").first())?.n ?? 0);
const leases = (replyId: string) => knex()("quota_leases").where({ reply_id: replyId });
const thisMonth = () => new Date().toISOString().slice(0, 8) + "01";
/** The lease of `replyId` runs out now (it is recorded again first when `user` is given), and the sweep runs. */
async function expireAndSweep(replyId: string, user?: TestUser): Promise<{ ended: number; given: number }> {
  // The service may be lent to other files: a lease one of them left to run out is swept first, so
  // that the sweep answered counts this test's lease only.
  await releaseExpiredLeases(knex(), new Date(), 1000, replyTables);
  if (user) await knex()("quota_leases").insert({ reply_id: replyId, user_id: user.id, period_start: thisMonth(), expires_at: new Date() }).onConflict("reply_id").ignore();
  await leases(replyId).update({ expires_at: new Date(Date.now() - 1000) });
  return releaseExpiredLeases(knex(), new Date(), 1000, replyTables);
}

describe(`the quota lease (${databaseKind})`, () => {
  it("is recorded with the reservation, for the reply's id, expiring after the lease time", async () => {
    const user = await registerUser(fixture.service);
    const before = Date.now();
    const reservation = await reserveMessage(fixture.service.services, user.id);
    expect(await used(user)).toBe(1);
    const rows = await leases(reservation.replyId).select("user_id", "period_start", "expires_at");
    expect(rows).toHaveLength(1);
    expect(rows[0].user_id).toBe(user.id);
    const due = (new Date(rows[0].expires_at as string).getTime() - before) / 1000;
    expect(due).toBeGreaterThanOrEqual(599);
    expect(due).toBeLessThanOrEqual(602);
    await reservation.release();
    expect(await leases(reservation.replyId)).toHaveLength(0);
  });

  it("a failed send gives the message back once and ends the lease; the sweep then gives back nothing", async () => {
    const user = await registerUser(fixture.service);
    const kept = await reserveMessage(fixture.service.services, user.id);
    const failed = await reserveMessage(fixture.service.services, user.id);
    expect(await used(user)).toBe(2);
    await failed.release();
    await failed.release();
    expect(await used(user)).toBe(1);
    expect(await leases(failed.replyId)).toHaveLength(0);
    // A sweep that had read the lease before the release: its delete finds nothing to end.
    expect((await expireAndSweep(failed.replyId)).given).toBe(0);
    expect(await used(user)).toBe(1);
    await kept.settle();
    expect(await leases(kept.replyId)).toHaveLength(0);
    expect(await used(user)).toBe(1);
  });

  it("after a crash (nothing released, nothing stored) the sweep gives the message back exactly once", async () => {
    const user = await registerUser(fixture.service);
    const other = await reserveMessage(fixture.service.services, user.id);
    const lost = await reserveMessage(fixture.service.services, user.id);
    expect(await used(user)).toBe(2);
    // This sweep or the service's own (every 30 s, in its worker) ends the lease: exactly one of them
    // gives the message back.
    const swept = await expireAndSweep(lost.replyId);
    expect(swept.ended).toBe(swept.given);
    expect(await leases(lost.replyId)).toHaveLength(0);
    expect(await used(user)).toBe(1);
    // A second sweep, and the reserving process's own late give-back, find the lease ended.
    expect((await releaseExpiredLeases(knex(), new Date(), 1000, replyTables)).given).toBe(0);
    await lost.release();
    expect(await used(user)).toBe(1);
    // The other reservation's lease has not run out: untouched.
    expect(await leases(other.replyId)).toHaveLength(1);
    await other.release();
    expect(await used(user)).toBe(0);
  });

  it("keeps the message of a reply that was stored, even if the lease was not settled", async () => {
    const { service } = fixture;
    const user = await registerUser(service);
    const client = service.clientFor(user);
    const persona = (await client.POST("/v1/personas", { body: { name: "Nova", instructions: "You are Nova." } })).data!;
    const conversation = (await client.POST("/v1/conversations", { body: { persona_id: persona.id, title: "Lease" } })).data!;
    const sent = await client.POST("/v1/conversations/{id}/messages", { params: { path: { id: conversation.id } }, body: { content: "hello" } });
    expect(sent.response.status).toBe(201);
    const reply = sent.data!.assistant_message;
    expect(await used(user)).toBe(1);
    // The lease of a stored reply, expiring as if its settling had been lost in a crash. The service's
    // own worker sweeps leases too and may end it first: either way it ends and gives nothing back.
    const swept = await expireAndSweep(reply.id, user);
    expect(swept.given).toBe(0);
    expect(swept.ended).toBeLessThanOrEqual(1);
    expect(await leases(reply.id)).toHaveLength(0);
    expect(await used(user)).toBe(1);
  });

  it("takes over a release job queued by the previous version, which then expires at once", async () => {
    const user = await registerUser(fixture.service);
    const lost = await reserveMessage(fixture.service.services, user.id);
    await leases(lost.replyId).delete(); // as the previous version kept it: in its job only
    await billingTasks(fixture.service.services)[QUOTA_RELEASE_TASK]!({ user_id: user.id, period_start: thisMonth(), reply_id: lost.replyId }, {} as never);
    expect(await leases(lost.replyId)).toHaveLength(1);
    await releaseExpiredLeases(knex(), new Date(Date.now() + 1000), 1000, replyTables);
    expect(await used(user)).toBe(0);
  });

  it("ends with the account: a purged user's leases go with it", async () => {
    const user = await registerUser(fixture.service);
    const reservation = await reserveMessage(fixture.service.services, user.id);
    await knex()("users").where({ id: user.id }).delete();
    expect(await leases(reservation.replyId)).toHaveLength(0);
  });
});
