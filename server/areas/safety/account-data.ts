import { withoutSecrets, type AccountDataSection } from "../../toolkit/account-data.ts";
import { actionsOnContentOf, forgetAuditSubjects, reportsFiledBy } from "./store.ts";

// A user's part of trust and safety in the data export and the purge (issue 41). The export has
// the reports the user filed and the actions on the user's content and account (store.ts says which
// columns: not the reported content's snapshot, nor the operators' names); reports of others about
// the user's content stay out (they would name the reporters).
// The purge deletes the user's reports and the actions on their content (foreign keys cascade),
// and leaves the audit log's records of operators' actions without the person.
export const safetyAccountData: AccountDataSection[] = [
  {
    key: "reports",
    tables: ["reports"],
    exportRows: async ({ knex, userId }) => (await reportsFiledBy(knex, userId)).map(withoutSecrets),
    beforePurge: async (services, userIds) => {
      await forgetAuditSubjects(services.db.knex, userIds).catch((error: unknown) => services.log.warn({ err: error }, "could not clear purged accounts from the moderation audit log"));
    },
  },
  { key: "moderation_actions", tables: ["moderation_actions"], exportRows: async ({ knex, userId }) => (await actionsOnContentOf(knex, userId)).map(withoutSecrets) },
];
