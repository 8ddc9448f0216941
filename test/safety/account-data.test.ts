import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditLog, resolveReport } from "../../server/areas/safety/index.ts";
import { archiveOf, purgeDeletedAccounts } from "../support/account-data.ts";
import { expectOk } from "../support/assertions.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { OPERATOR, publicPersona, report } from "./helpers.ts";

// A user's part of trust and safety in the data export and the purge (issue 41, "Done when"): the
// archive holds the reports the user filed and the actions on the user's content; the purge
// deletes the reports they made, and the audit log keeps its records of operators' actions
// without the person.
let service: TestService;
let clock = new Date();
const DAY_MS = 24 * 60 * 60 * 1000;
let reporter: TestUser;
let owner: TestUser;
let personaId: string;
let reportId: string;

beforeAll(async () => {
  service = await startTestService({ now: () => clock });
  reporter = await registerUser(service);
  owner = await registerUser(service);
  personaId = (await publicPersona(service, owner)).id;
  reportId = (await report(service, reporter, "persona", personaId)).id;
  await resolveReport(service.services, reportId, "takedown", OPERATOR);
});
afterAll(async () => {
  await service?.close();
});

type Archive = Record<string, Record<string, unknown>[]>;

describe(`trust and safety in the account data (${databaseKind})`, () => {
  it("exports the reports a user filed, and not the reports of others about them", async () => {
    const mine = (await archiveOf(service.services, reporter.id)) as unknown as Archive;
    expect(mine.reports).toEqual([expect.objectContaining({ id: reportId, reporter_id: reporter.id, target_id: personaId, status: "resolved", resolution: "taken_down" })]);
    // Not the snapshot: it holds the persona's instructions, which are its owner's alone.
    expect(Object.keys(mine.reports![0]!)).not.toContain("snapshot");
    expect(JSON.stringify(mine.reports)).not.toContain("lighthouse keeper");
    const theirs = (await archiveOf(service.services, owner.id)) as unknown as Archive;
    expect(theirs.reports).toEqual([]);
  });

  it("exports the actions on the user's content", async () => {
    const archive = (await archiveOf(service.services, owner.id)) as unknown as Archive;
    expect(archive.moderation_actions).toEqual([expect.objectContaining({ kind: "takedown", target_id: personaId, owner_id: owner.id, reason: OPERATOR.reason })]);
    expect(JSON.stringify(archive.moderation_actions)).not.toContain(OPERATOR.operator);
    expect((await archiveOf(service.services, reporter.id) as unknown as Archive).moderation_actions).toEqual([]);
  });

  it("purges the reports a user made, and leaves the audit log without the purged person", async () => {
    const { knex } = service.services.db;
    expect((await auditLog(service.services, { limit: 100, subjectUserId: owner.id })).length).toBeGreaterThan(0);
    for (const user of [reporter, owner]) await expectOk(service.clientFor(user).DELETE("/v1/auth/me", { body: { password: user.password } }));
    clock = new Date(clock.getTime() + 31 * DAY_MS);
    await purgeDeletedAccounts(service.services);
    expect(await knex("reports").where({ id: reportId })).toEqual([]);
    expect(await knex("moderation_actions").where({ owner_id: owner.id })).toEqual([]);
    // The operators' records stay, without the account or the free-text reason.
    const kept = await knex("moderation_audit").where({ report_id: reportId });
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.every((row: { subject_user_id: string | null; reason: string | null }) => row.subject_user_id === null && row.reason === null)).toBe(true);
    expect(await auditLog(service.services, { limit: 100, subjectUserId: owner.id })).toEqual([]);
  });
});
