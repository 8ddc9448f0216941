import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveReport, suspendUser } from "../../server/areas/safety/index.ts";
import { expectOk } from "../support/assertions.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { OPERATOR, publicPersona, report } from "./helpers.ts";

// Webhook events of trust and safety (issue 41, item 6): `report.created`, `content.taken_down` and
// `account.suspended` are recorded for the account SAFETY_EVENTS_ACCOUNT names, whose webhooks may
// subscribe to them; nobody else's events carry them.
const OPS = `ops_${randomBytes(4).toString("hex")}`;
let service: TestService;
let ops: TestUser;
let reporter: TestUser;
let owner: TestUser;

beforeAll(async () => {
  service = await startTestService({ env: { SAFETY_EVENTS_ACCOUNT: OPS, WEBHOOKS_ALLOW_PRIVATE_URLS: "true" } });
  ops = await registerUser(service, { username: OPS });
  reporter = await registerUser(service);
  owner = await registerUser(service);
});
afterAll(async () => {
  await service?.close();
});

const eventsOf = async (user: TestUser) =>
  (await service.services.db.knex("event_outbox").where({ user_id: user.id }).orderBy("created_at")).map((row: { type: string; data: Record<string, unknown> }) => ({ type: row.type, data: row.data }));

describe(`safety events (${databaseKind})`, () => {
  it("may be subscribed to", async () => {
    const hook = await expectOk(service.clientFor(ops).POST("/v1/webhooks", { body: { url: "http://127.0.0.1:9/hooks", events: ["report.created", "content.taken_down", "account.suspended"] } }), 201);
    expect(hook.events).toEqual(["report.created", "content.taken_down", "account.suspended"]);
  });

  it("are recorded for the operators' account when a report is filed, content taken down and an account suspended", async () => {
    const persona = await publicPersona(service, owner);
    const filed = await report(service, reporter, "persona", persona.id);
    await resolveReport(service.services, filed.id, "takedown", OPERATOR);
    await suspendUser(service.services, owner.username, OPERATOR);
    const events = await eventsOf(ops);
    expect(events).toEqual([
      { type: "report.created", data: expect.objectContaining({ report_id: filed.id, target_type: "persona", target_id: persona.id, reason: "harassment", by_moderation_provider: false }) },
      { type: "content.taken_down", data: expect.objectContaining({ target_type: "persona", target_id: persona.id, kind: "takedown", reason: OPERATOR.reason }) },
      { type: "account.suspended", data: expect.objectContaining({ user_id: owner.id, reason: OPERATOR.reason }) },
    ]);
    // The reporter's identity is not in them, and nobody else gets them.
    expect(JSON.stringify(events)).not.toContain(reporter.id);
    for (const user of [reporter, owner]) expect((await eventsOf(user)).filter((event) => event.type.includes("."))).toEqual([]);
  });
});
