// The trust and safety area's public surface (issue 41, docs/design/safety.md): users' reports, the
// actions on their content with appeals, content settings, the moderation provider's holds, and
// the operators' review functions the admin CLI calls (`persona reports`, `persona takedowns`,
// `persona users suspend`, `persona ratings`, `persona audit`).
import { defineArea } from "../../toolkit/area.ts";
import { safetyAccountData } from "./account-data.ts";
import { handlers } from "./handlers.ts";
import { holdTasks } from "./holds.ts";

export const area = defineArea({
  name: "safety",
  handlers,
  tasks: (services) => holdTasks(services),
  accountData: safetyAccountData,
  tables: ["reports", "moderation_actions", "moderation_audit"],
});
export { appealsWaiting, rate, reportDetail, resolveReport, revertTakedown, reviewQueue, suspendUser, takeDown, unsuspendUser, upholdTakedown, type Decision, type Operator } from "./review.ts";
export { auditLog } from "./audit.ts";
export type { ActionRow, AuditRow, ReportRow } from "./store.ts";
