import { describe, expect, it } from "vitest";
import { billingTasks } from "../../server/billing/jobs.ts";
import { reserveMessage } from "../../server/billing/usage.ts";
import { QUOTA_RELEASE_TASK } from "../../server/billing/usage-store.ts";
import { databaseKind } from "../support/service.ts";
import { useTestService } from "../support/fixtures.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// The quota lease (docs/decisions.md, "Resilience"): every reserved message has a release job
// queued by the reserving statement, which gives the message back, exactly once, unless its reply
// was stored; a send that fails gives it back itself and removes the job. The process-crash case
// is test/resilience/api-kill.test.ts; here the job is run by hand, as a worker would after a crash.
const fixture = useTestService({ env: { QUOTA_LEASE_SECONDS: "600" } });

const knex = () => fixture.service.services.db.knex;
const used = async (user: TestUser) => Number((await knex()("usage_counters").where({ user_id: user.id }).sum("messages_sent as n").first())?.n ?? 0);
// The private table: the public view has no payload.
const leaseJobs = (replyId: string) => knex()("graphile_worker._private_jobs").where({ key: `${QUOTA_RELEASE_TASK}:${replyId}` });
/** The release job as a worker runs it once its time is up; `payload` replays an earlier run's. */
async function runLease(replyId: string, payload?: Record<string, unknown>): Promise<Record<string, unknown>> {
  const [job] = await leaseJobs(replyId).select("payload");
  const given = payload ?? (job?.payload as Record<string, unknown> | undefined);
  if (!given) throw new Error(`no lease job for ${replyId}`);
  await billingTasks(fixture.service.services)[QUOTA_RELEASE_TASK]!(given, {} as never);
  return given;
}

describe(`the quota lease (${databaseKind})`, () => {
  it("is queued with the reservation, for the reply's id, due after the lease time", async () => {
    const user = await registerUser(fixture.service);
    const reservation = await reserveMessage(fixture.service.services, user.id);
    expect(await used(user)).toBe(1);
    const jobs = await leaseJobs(reservation.replyId).select("payload", "run_at", "created_at", "max_attempts");
    expect(jobs).toHaveLength(1);
    expect(jobs[0].payload).toMatchObject({ user_id: user.id, reply_id: reservation.replyId });
    const due = (new Date(jobs[0].run_at as string).getTime() - new Date(jobs[0].created_at as string).getTime()) / 1000;
    expect(due).toBeGreaterThanOrEqual(599);
    expect(due).toBeLessThanOrEqual(601);
    await reservation.release();
  });

  it("a failed send gives the message back once and removes the job, which then gives back nothing", async () => {
    const user = await registerUser(fixture.service);
    const kept = await reserveMessage(fixture.service.services, user.id);
    const failed = await reserveMessage(fixture.service.services, user.id);
    expect(await used(user)).toBe(2);
    await failed.release();
    await failed.release();
    expect(await used(user)).toBe(1);
    expect(await leaseJobs(failed.replyId)).toHaveLength(0);
    await runLease(failed.replyId, { user_id: user.id, period_start: new Date().toISOString().slice(0, 8) + "01", reply_id: failed.replyId });
    expect(await used(user)).toBe(1);
    await kept.settle();
    expect(await leaseJobs(kept.replyId)).toHaveLength(0);
  });

  it("after a crash (nothing released, nothing stored) the job gives the message back exactly once", async () => {
    const user = await registerUser(fixture.service);
    const other = await reserveMessage(fixture.service.services, user.id);
    const lost = await reserveMessage(fixture.service.services, user.id);
    expect(await used(user)).toBe(2);
    const payload = await runLease(lost.replyId);
    expect(await used(user)).toBe(1);
    // A repeated run (a worker that died after the give-back committed) and the reserving
    // process's own give-back find the lease spent.
    await runLease(lost.replyId, payload);
    await lost.release();
    expect(await used(user)).toBe(1);
    await other.release();
    expect(await used(user)).toBe(0);
  });

  it("keeps the message of a reply that was stored, even if the lease was not settled", async () => {
    const { service } = fixture;
    const user = await registerUser(service);
    const persona = await (await service.fetch("/v1/personas", { method: "POST", headers: { ...user.auth, "content-type": "application/json" }, body: JSON.stringify({ name: "Nova", instructions: "You are Nova." }) })).json();
    const conversation = await (await service.fetch("/v1/conversations", { method: "POST", headers: { ...user.auth, "content-type": "application/json" }, body: JSON.stringify({ persona_id: persona.id, title: "Lease" }) })).json();
    const sent = await service.fetch(`/v1/conversations/${conversation.id}/messages`, { method: "POST", headers: { ...user.auth, "content-type": "application/json" }, body: JSON.stringify({ content: "hello" }) });
    expect(sent.status).toBe(201);
    const reply = (await sent.json()).assistant_message as { id: string };
    expect(await used(user)).toBe(1);
    // The job of a stored reply, run as if its removal had been lost in a crash.
    await runLease(reply.id, { user_id: user.id, period_start: new Date().toISOString().slice(0, 8) + "01", reply_id: reply.id });
    expect(await used(user)).toBe(1);
  });
});
