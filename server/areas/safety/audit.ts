import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";
import type { Services } from "../../toolkit/services.ts";
import { insertAudit, listAudit, type AuditRow } from "./store.ts";

// The audit log of trust and safety (issue 41): every operator action, every appeal and every hold
// of the moderation provider, with who, when and why. It outlives the accounts it names: the purge
// clears their id and the free-text reason (account-data.ts), so it keeps no person.

export interface AuditEntry {
  actor: string;
  action: string;
  targetType: string;
  targetId: string | null;
  subjectUserId: string | null;
  reason: string | null;
  reportId?: string | null;
  actionId?: string | null;
}

export async function audit(services: Services, entry: AuditEntry, knex: Knex = services.db.knex): Promise<void> {
  await insertAudit(knex, {
    id: uuidv7(),
    at: services.now(),
    actor: entry.actor,
    action: entry.action,
    target_type: entry.targetType,
    target_id: entry.targetId,
    subject_user_id: entry.subjectUserId,
    reason: entry.reason,
    report_id: entry.reportId ?? null,
    action_id: entry.actionId ?? null,
  });
}

/** The audit log, newest first (`persona audit`). */
export async function auditLog(services: Services, filter: { limit: number; subjectUserId?: string; targetId?: string }): Promise<AuditRow[]> {
  return listAudit(services.db.knex, filter);
}
