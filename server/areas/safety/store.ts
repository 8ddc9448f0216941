import type { Knex } from "knex";
import { offsetPage } from "../../toolkit/db/paging.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";

// All SQL of the safety area: reports, the actions on users' content and accounts, and the
// operators' audit log (migration 0034). The content itself lives with its areas, reached through
// their index.ts (targets.ts).

export type ReportTargetType = "persona" | "listing" | "review" | "profile" | "room_message" | "conversation_message";
export type ActionTargetType = "persona" | "listing" | "review" | "profile" | "room_message" | "account";
export type Resolution = "dismissed" | "taken_down" | "warned" | "suspended";
export type ActionKind = "takedown" | "hold" | "warning" | "suspension";

export interface ReportRow {
  id: string;
  /** Null for a report of the moderation provider (content held for review). */
  reporter_id: string | null;
  target_type: ReportTargetType;
  target_id: string;
  target_owner_id: string | null;
  reason: string;
  details: string | null;
  snapshot: Record<string, unknown>;
  status: "open" | "resolved";
  resolution: Resolution | null;
  resolved_by: string | null;
  resolved_at: Date | null;
  created_at: Date;
}

export interface ActionRow {
  id: string;
  kind: ActionKind;
  target_type: ActionTargetType;
  target_id: string;
  owner_id: string;
  reason: string;
  report_id: string | null;
  created_by: string;
  created_at: Date;
  appeal_message: string | null;
  appealed_at: Date | null;
  appeal_outcome: "upheld" | null;
  reverted_at: Date | null;
  reverted_by: string | null;
  revert_reason: string | null;
}

export interface AuditRow {
  id: string;
  at: Date;
  actor: string;
  action: string;
  target_type: string;
  target_id: string | null;
  subject_user_id: string | null;
  reason: string | null;
  report_id: string | null;
  action_id: string | null;
}

/** The name of the index that keeps one open report per reporter and target. */
export const ONE_OPEN_REPORT = "reports_one_open";
/** The name of the index that keeps one standing takedown or hold per target. */
export const ONE_STANDING_ACTION = "moderation_actions_standing";

// ---------------------------------------------------------------- reports

export async function insertReport(knex: Knex, row: ReportRow): Promise<ReportRow> {
  const [saved] = await knex("reports").insert({ ...row, snapshot: JSON.stringify(row.snapshot) }).returning("*");
  return saved as ReportRow;
}

/** How many reports `reporterId` filed since `since`, and when the oldest of them was filed. */
export async function reportsSince(knex: Knex, reporterId: string, since: Date): Promise<{ count: number; oldest: Date | null }> {
  const row = await knex("reports").where("reporter_id", reporterId).where("created_at", ">", since).first(knex.raw("count(*) AS count"), knex.raw("min(created_at) AS oldest"));
  const { count, oldest } = row as { count: string | number; oldest: Date | null };
  return { count: Number(count), oldest: oldest ? new Date(oldest) : null };
}

export async function listReportsOf(knex: Knex, reporterId: string, status: string | undefined, window: PageWindow): Promise<{ rows: ReportRow[]; total: number }> {
  const query = knex("reports").where("reporter_id", reporterId);
  if (status) query.where("status", status);
  return offsetPage<ReportRow>(query, "created_at DESC, id DESC", window);
}

export async function findReport(knex: Knex, id: string): Promise<ReportRow | undefined> {
  return knex("reports").where({ id }).first();
}

/** Open reports grouped by target, the most reported first, then the longest waiting. */
export async function openTargets(
  knex: Knex,
  filter: { targetType?: string; limit: number },
): Promise<{ target_type: ReportTargetType; target_id: string; target_owner_id: string | null; reports: number; first_at: Date; last_at: Date; reasons: string[]; report_id: string }[]> {
  const query = knex("reports")
    .where("status", "open")
    .groupBy("target_type", "target_id", "target_owner_id")
    .select(
      "target_type",
      "target_id",
      "target_owner_id",
      knex.raw("count(*)::int AS reports"),
      knex.raw("min(created_at) AS first_at"),
      knex.raw("max(created_at) AS last_at"),
      knex.raw("array_agg(DISTINCT reason ORDER BY reason) AS reasons"),
      // The first report of the target names it in the CLI (`persona reports show <id>`).
      knex.raw("(array_agg(id ORDER BY created_at, id))[1] AS report_id"),
    )
    .orderByRaw("count(*) DESC, min(created_at) ASC")
    .limit(filter.limit);
  if (filter.targetType) query.where("target_type", filter.targetType);
  return query;
}

/** Every report of a target, oldest first. */
export async function reportsOfTarget(knex: Knex, targetType: string, targetId: string): Promise<ReportRow[]> {
  return knex("reports").where({ target_type: targetType, target_id: targetId }).orderBy([{ column: "created_at" }, { column: "id" }]);
}

/** Resolves every open report of a target at once; answers the reports resolved. */
export async function resolveOpenReports(
  knex: Knex,
  targetType: string,
  targetId: string,
  resolution: Resolution,
  by: string,
  at: Date,
): Promise<ReportRow[]> {
  return knex("reports")
    .where({ target_type: targetType, target_id: targetId, status: "open" })
    .update({ status: "resolved", resolution, resolved_by: by, resolved_at: at })
    .returning("*");
}

// ---------------------------------------------------------------- actions

export async function insertAction(knex: Knex, row: ActionRow): Promise<ActionRow> {
  const [saved] = await knex("moderation_actions").insert(row).returning("*");
  return saved as ActionRow;
}

export async function findAction(knex: Knex, id: string): Promise<ActionRow | undefined> {
  return knex("moderation_actions").where({ id }).first();
}

/** The takedown or hold standing on a target, if any. */
export async function standingAction(knex: Knex, targetType: string, targetId: string): Promise<ActionRow | undefined> {
  return knex("moderation_actions").where({ target_type: targetType, target_id: targetId }).whereNull("reverted_at").whereIn("kind", ["takedown", "hold"]).first();
}

/** The suspension standing on an account, if any. */
export async function standingSuspension(knex: Knex, userId: string): Promise<ActionRow | undefined> {
  return knex("moderation_actions").where({ kind: "suspension", target_type: "account", target_id: userId }).whereNull("reverted_at").first();
}

export async function listActionsOf(knex: Knex, ownerId: string, window: PageWindow): Promise<{ rows: ActionRow[]; total: number }> {
  return offsetPage<ActionRow>(knex("moderation_actions").where("owner_id", ownerId), "created_at DESC, id DESC", window);
}

/** Actions with an appeal waiting, the oldest appeal first. */
export async function pendingAppeals(knex: Knex, limit: number): Promise<ActionRow[]> {
  return knex("moderation_actions").whereNotNull("appealed_at").whereNull("appeal_outcome").whereNull("reverted_at").orderBy([{ column: "appealed_at" }, { column: "id" }]).limit(limit);
}

/** Records the owner's one appeal; undefined when it was appealed already, reverted, or is not the owner's. */
export async function recordAppeal(knex: Knex, id: string, ownerId: string, message: string, at: Date): Promise<ActionRow | undefined> {
  const [row] = await knex("moderation_actions")
    .where({ id, owner_id: ownerId })
    .whereNull("appealed_at")
    .whereNull("reverted_at")
    .whereIn("kind", ["takedown", "hold"])
    .update({ appeal_message: message, appealed_at: at })
    .returning("*");
  return row as ActionRow | undefined;
}

/** Marks a standing action reverted; undefined when it was reverted already. */
export async function markReverted(knex: Knex, id: string, by: string, reason: string | null, at: Date): Promise<ActionRow | undefined> {
  const [row] = await knex("moderation_actions").where({ id }).whereNull("reverted_at").update({ reverted_at: at, reverted_by: by, revert_reason: reason }).returning("*");
  return row as ActionRow | undefined;
}

/** A hold the operator confirmed: it becomes a takedown with the operator's reason. */
export async function confirmHold(knex: Knex, id: string, reason: string, reportId: string | null): Promise<ActionRow | undefined> {
  const [row] = await knex("moderation_actions").where({ id, kind: "hold" }).whereNull("reverted_at").update({ kind: "takedown", reason, report_id: reportId }).returning("*");
  return row as ActionRow | undefined;
}

/** The operator kept an appealed action. */
export async function upholdAppeal(knex: Knex, id: string): Promise<ActionRow | undefined> {
  const [row] = await knex("moderation_actions").where({ id }).whereNotNull("appealed_at").whereNull("appeal_outcome").whereNull("reverted_at").update({ appeal_outcome: "upheld" }).returning("*");
  return row as ActionRow | undefined;
}

// ---------------------------------------------------------------- audit log

export async function insertAudit(knex: Knex, row: AuditRow): Promise<void> {
  await knex("moderation_audit").insert(row);
}

export async function listAudit(knex: Knex, filter: { limit: number; subjectUserId?: string; targetId?: string }): Promise<AuditRow[]> {
  const query = knex("moderation_audit").orderBy([{ column: "at", order: "desc" }, { column: "id", order: "desc" }]).limit(filter.limit);
  if (filter.subjectUserId) query.where("subject_user_id", filter.subjectUserId);
  if (filter.targetId) query.where("target_id", filter.targetId);
  return query;
}

/** Purged accounts leave the audit log's records without a person: their id and the free-text reasons go. */
export async function forgetAuditSubjects(knex: Knex, userIds: readonly string[]): Promise<void> {
  if (userIds.length === 0) return;
  await knex("moderation_audit").whereIn("subject_user_id", userIds).update({ subject_user_id: null, reason: null });
  await knex("moderation_audit").whereIn("target_id", userIds).update({ target_id: null, reason: null });
}

// ---------------------------------------------------------------- account data

/**
 * The reports a user filed, for their data export: what they wrote and what became of it. The
 * snapshot stays out: it holds the reported content as operators see it (a persona's instructions
 * are its owner's alone), as do the target's owner and the operator who decided.
 */
export async function reportsFiledBy(knex: Knex, userId: string): Promise<Record<string, unknown>[]> {
  return knex("reports")
    .where("reporter_id", userId)
    .orderBy([{ column: "created_at" }, { column: "id" }])
    .select("id", "reporter_id", "target_type", "target_id", "reason", "details", "status", "resolution", "resolved_at", "created_at");
}

/** The actions on a user's content and account, for their data export, without the operators' names. */
export async function actionsOnContentOf(knex: Knex, userId: string): Promise<Record<string, unknown>[]> {
  return knex("moderation_actions")
    .where("owner_id", userId)
    .orderBy([{ column: "created_at" }, { column: "id" }])
    .select("id", "kind", "target_type", "target_id", "owner_id", "reason", "report_id", "created_at", "appeal_message", "appealed_at", "appeal_outcome", "reverted_at", "revert_reason");
}
