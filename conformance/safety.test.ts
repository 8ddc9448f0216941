import { beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { createPersona, registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { idOr } from "./support/placeholders.ts";
import { target } from "./support/target.ts";

// Trust and safety (issue 41): reports, the actions on one's content and their appeal, the account's
// content settings, and the export a suspended account keeps. Operators act through the CLI only.
describe("safety", () => {
  let reporter: TestUser;
  let owner: TestUser;
  let personaId: string | undefined;
  let reportId: string | undefined;

  beforeAll(async () => {
    [reporter, owner] = await Promise.all([registerUser("reporter"), registerUser("reported")]);
    personaId = await createPersona(owner);
  });

  op("reports_create", async () => {
    const json = { target_type: "persona", target_id: idOr(personaId), reason: "spam", details: "Posts links in every reply." };
    const answer = await call("reports_create", { token: reporter.token, json, expect: [201] });
    reportId = (answer.json as { id?: string }).id;
    // One open report per reporter and target.
    if (target.stateful && reportId) await call("reports_create", { token: reporter.token, json, expect: [409] });
  });

  op("reports_list", async () => {
    const answer = await call("reports_list", { token: reporter.token, query: { limit: 10 }, expect: [200] });
    if (target.stateful && reportId) expect(JSON.stringify(answer.json)).toContain(reportId);
  });

  op("reports_get", async () => {
    await call("reports_get", { token: reporter.token, path: { id: idOr(reportId) }, expect: [200] });
    // Another user's report is not theirs to see.
    if (target.stateful && reportId) await call("reports_get", { token: owner.token, path: { id: reportId }, expect: [404] });
  });

  op("moderation_actions_list", async () => {
    await call("moderation_actions_list", { token: owner.token, query: { limit: 10 }, expect: [200] });
  });

  op("moderation_actions_appeal", async () => {
    // No operator acted on the owner's content here (operators act through the CLI): an unknown action.
    await call("moderation_actions_appeal", { token: owner.token, path: { id: idOr(undefined) }, json: { message: "This persona follows the rules." }, expect: [404] });
  });

  op("content_settings_get", async () => {
    await call("content_settings_get", { token: reporter.token, expect: [200] });
  });

  op("content_settings_update", async () => {
    // 409 when the server does not offer mature content at all (MATURE_CONTENT=off).
    await call("content_settings_update", { token: reporter.token, json: { show_mature: true }, expect: [200, 409] });
  });

  op("account_suspension_export_data", async () => {
    // The account is not suspended: the export goes through the ordinary route, and this one says so.
    await call("account_suspension_export_data", { json: { email: reporter.email, password: reporter.password }, expect: [409] });
  });
});
