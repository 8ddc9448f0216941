import { v7 as uuidv7 } from "uuid";
import { findAccount, setAccountSuspension } from "../auth/index.ts";
import { changePersonaRating, type ContentRating, type PersonaRow } from "../personas/index.ts";
import { isUniqueViolation } from "../../toolkit/db/rows.ts";
import { conflict, invalidField, notFound } from "../../toolkit/http/error-catalogue.ts";
import { isUuid } from "../../toolkit/http/text.ts";
import type { Services } from "../../toolkit/services.ts";
import { audit } from "./audit.ts";
import { recordSafetyEvent, safetyEventsRecipient } from "./events.ts";
import {
  confirmHold,
  findAction,
  findReport,
  insertAction,
  markReverted,
  ONE_STANDING_ACTION,
  openTargets,
  pendingAppeals,
  reportsOfTarget,
  resolveOpenReports,
  standingAction,
  standingSuspension,
  upholdAppeal,
  type ActionRow,
  type ActionTargetType,
  type ReportRow,
  type Resolution,
} from "./store.ts";
import { applyTakedown, currentState, ownerOf } from "./targets.ts";

// The operators' side (issue 41): the review queue, resolving reports, takedowns and their
// reverts, suspensions, ratings. Operators act through the admin CLI on the server's database
// (docs/adr/0350): `persona reports`, `persona takedowns`, `persona users suspend`, `persona
// ratings`, `persona audit`. Every action is recorded in the audit log with who, when and why.

/** Who acts and why: the operator as the CLI names them (`--as`, else the system user). */
export interface Operator {
  operator: string;
  reason: string;
}

export type Decision = "dismiss" | "takedown" | "warn" | "suspend";

const RESOLUTION: Record<Decision, Resolution> = { dismiss: "dismissed", takedown: "taken_down", warn: "warned", suspend: "suspended" };

type Target = { type: ActionTargetType; id: string };

/** What a report's takedown acts on: the target, or for a conversation message the persona whose reply it is. */
export function actsOn(report: ReportRow): Target {
  if (report.target_type === "conversation_message") return { type: "persona", id: String(report.snapshot.persona_id) };
  return { type: report.target_type, id: report.target_id };
}

/** Open reports by target, the most reported first (`persona reports list`). */
export async function reviewQueue(services: Services, filter: { targetType?: string; limit: number }) {
  return openTargets(services.db.knex, filter);
}

/** A report with every report of its target, the target as it is now and the action standing on it (`persona reports show`). */
export async function reportDetail(services: Services, reportId: string) {
  const report = isUuid(reportId) ? await findReport(services.db.knex, reportId) : undefined;
  if (!report) throw notFound("Report");
  const target = actsOn(report);
  const [reports, current, standing] = await Promise.all([
    reportsOfTarget(services.db.knex, report.target_type, report.target_id),
    currentState(services, target),
    standingAction(services.db.knex, target.type, target.id),
  ]);
  return { report, reports, target, current: current ?? null, standing: standing ?? null };
}

/**
 * Resolves a report, and with it every open report of its target: dismiss (a hold of the moderation
 * provider is released), take the target down, warn its owner, or suspend its owner.
 */
export async function resolveReport(services: Services, reportId: string, decision: Decision, by: Operator): Promise<{ reports: ReportRow[]; action: ActionRow | undefined }> {
  const report = isUuid(reportId) ? await findReport(services.db.knex, reportId) : undefined;
  if (!report) throw notFound("Report");
  if (report.status !== "open") throw conflict(`The report is already resolved (${report.resolution})`);
  const target = actsOn(report);
  const ownerId = report.target_owner_id ?? (await ownerOf(services, target));
  let action: ActionRow | undefined;
  if (decision === "takedown") {
    action = await takeDown(services, target, ownerId, by, report.id);
  } else if (decision === "warn") {
    if (!ownerId) throw notFound("The target's owner");
    action = await insertAction(services.db.knex, newAction("warning", target, ownerId, by, report.id, services.now()));
    await audit(services, { actor: by.operator, action: "warn", targetType: target.type, targetId: target.id, subjectUserId: ownerId, reason: by.reason, reportId: report.id, actionId: action.id });
  } else if (decision === "suspend") {
    if (!ownerId) throw notFound("The target's owner");
    action = await suspendAccount(services, ownerId, by, report.id);
  } else {
    const standing = await standingAction(services.db.knex, target.type, target.id);
    // Dismissing what the moderation provider held releases it.
    if (standing?.kind === "hold") action = await revert(services, standing, by);
  }
  const reports = await resolveOpenReports(services.db.knex, report.target_type, report.target_id, RESOLUTION[decision], by.operator, services.now());
  await audit(services, { actor: by.operator, action: `resolve:${decision}`, targetType: report.target_type, targetId: report.target_id, subjectUserId: ownerId ?? null, reason: by.reason, reportId: report.id });
  return { reports, action };
}

/** A new action on `target` by `by` (an operator, or the moderation provider holding it). */
export function newAction(kind: ActionRow["kind"], target: Target, ownerId: string, by: Operator, reportId: string | null, at: Date): ActionRow {
  return {
    id: uuidv7(),
    kind,
    target_type: target.type,
    target_id: target.id,
    owner_id: ownerId,
    reason: by.reason,
    report_id: reportId,
    created_by: by.operator,
    created_at: at,
    appeal_message: null,
    appealed_at: null,
    appeal_outcome: null,
    reverted_at: null,
    reverted_by: null,
    revert_reason: null,
  };
}

/**
 * Takes a target down from every public place at once (the column its area's public queries read)
 * and records why; the owner keeps it and sees the reason. A hold of the moderation provider
 * becomes the operator's takedown; a target already down stays so.
 */
export async function takeDown(services: Services, target: Target, ownerId: string | undefined, by: Operator, reportId: string | null = null): Promise<ActionRow> {
  const { knex } = services.db;
  const standing = await standingAction(knex, target.type, target.id);
  if (standing?.kind === "takedown") return standing;
  if (!ownerId) throw notFound("The target");
  let action: ActionRow | undefined;
  if (standing?.kind === "hold") {
    action = await confirmHold(knex, standing.id, by.reason, reportId);
  } else {
    if (!(await applyTakedown(services, target, services.now()))) throw notFound("The target");
    const recipient = await safetyEventsRecipient(services);
    try {
      action = await knex.transaction(async (trx) => {
        const saved = await insertAction(trx, newAction("takedown", target, ownerId, by, reportId, services.now()));
        await recordSafetyEvent(trx, recipient, "content.taken_down", { action_id: saved.id, target_type: target.type, target_id: target.id, kind: "takedown", reason: by.reason }, saved.created_at);
        return saved;
      });
    } catch (error) {
      // Taken down meanwhile by another operator: theirs stands.
      if (!isUniqueViolation(error, ONE_STANDING_ACTION)) throw error;
      action = await standingAction(knex, target.type, target.id);
    }
  }
  if (!action) throw conflict("The target's standing action changed meanwhile; look again");
  await audit(services, { actor: by.operator, action: "takedown", targetType: target.type, targetId: target.id, subjectUserId: ownerId, reason: by.reason, reportId, actionId: action.id });
  return action;
}

/** Puts a takedown's or hold's target back in every public place. */
async function revert(services: Services, action: ActionRow, by: Operator): Promise<ActionRow> {
  const reverted = await markReverted(services.db.knex, action.id, by.operator, by.reason, services.now());
  if (!reverted) throw conflict("This action was already reverted");
  await applyTakedown(services, { type: action.target_type, id: action.target_id }, null);
  await audit(services, { actor: by.operator, action: `revert:${action.kind}`, targetType: action.target_type, targetId: action.target_id, subjectUserId: action.owner_id, reason: by.reason, actionId: action.id });
  return reverted;
}

/** Reverts a standing takedown or hold (`persona takedowns revert`), appealed or not. */
export async function revertTakedown(services: Services, actionId: string, by: Operator): Promise<ActionRow> {
  const action = isUuid(actionId) ? await findAction(services.db.knex, actionId) : undefined;
  if (!action || (action.kind !== "takedown" && action.kind !== "hold")) throw notFound("Takedown");
  if (action.reverted_at) throw conflict("This takedown was already reverted");
  return revert(services, action, by);
}

/** Keeps an appealed takedown (`persona takedowns uphold`): the appeal is closed, the content stays down. */
export async function upholdTakedown(services: Services, actionId: string, by: Operator): Promise<ActionRow> {
  const action = isUuid(actionId) ? await findAction(services.db.knex, actionId) : undefined;
  if (!action || (action.kind !== "takedown" && action.kind !== "hold")) throw notFound("Takedown");
  const upheld = await upholdAppeal(services.db.knex, action.id);
  if (!upheld) throw conflict("This takedown has no appeal waiting");
  await audit(services, { actor: by.operator, action: "uphold", targetType: action.target_type, targetId: action.target_id, subjectUserId: action.owner_id, reason: by.reason, actionId: action.id });
  return upheld;
}

/** Takedowns and holds with an appeal waiting, the oldest appeal first (`persona takedowns list`). */
export async function appealsWaiting(services: Services, limit: number): Promise<ActionRow[]> {
  return pendingAppeals(services.db.knex, limit);
}

/** Suspends an account: it can no longer sign in or use its keys, and its public content is hidden. */
async function suspendAccount(services: Services, userId: string, by: Operator, reportId: string | null): Promise<ActionRow> {
  const { knex } = services.db;
  if (await standingSuspension(knex, userId)) throw conflict("The account is already suspended");
  const now = services.now();
  const account = await setAccountSuspension(services, userId, now, by.reason);
  if (!account) throw notFound("Account");
  const recipient = await safetyEventsRecipient(services);
  const action = await knex.transaction(async (trx) => {
    const saved = await insertAction(trx, newAction("suspension", { type: "account", id: userId }, userId, by, reportId, now));
    await recordSafetyEvent(trx, recipient, "account.suspended", { action_id: saved.id, user_id: userId, reason: by.reason }, now);
    return saved;
  });
  await audit(services, { actor: by.operator, action: "suspend", targetType: "account", targetId: userId, subjectUserId: userId, reason: by.reason, reportId, actionId: action.id });
  return action;
}

/** A live account by id, e-mail or username; 404 otherwise. */
async function requireAccount(services: Services, who: string) {
  const account = await findAccount(services, who);
  if (!account || account.deleted_at) throw notFound("Account");
  return account;
}

/** `persona users suspend <user>`. */
export async function suspendUser(services: Services, who: string, by: Operator): Promise<ActionRow> {
  const account = await requireAccount(services, who);
  if (account.suspended_at) throw conflict("The account is already suspended");
  return suspendAccount(services, account.id, by, null);
}

/** `persona users unsuspend <user>`: it can sign in again and its public content is back. */
export async function unsuspendUser(services: Services, who: string, by: Operator): Promise<{ userId: string; action: ActionRow | undefined }> {
  const account = await requireAccount(services, who);
  if (!account.suspended_at) throw conflict("The account is not suspended");
  await setAccountSuspension(services, account.id, null, null);
  const standing = await standingSuspension(services.db.knex, account.id);
  const action = standing ? await markReverted(services.db.knex, standing.id, by.operator, by.reason, services.now()) : undefined;
  await audit(services, { actor: by.operator, action: "unsuspend", targetType: "account", targetId: account.id, subjectUserId: account.id, reason: by.reason, actionId: action?.id ?? null });
  return { userId: account.id, action };
}

/** `persona ratings set <persona> <rating>`: an operator's rating, which the persona's listing follows. */
export async function rate(services: Services, personaId: string, rating: ContentRating, by: Operator): Promise<PersonaRow> {
  if (rating !== "general" && rating !== "mature") throw invalidField("rating", "must be general or mature", "The rating must be general or mature");
  const persona = await changePersonaRating(services, personaId, rating);
  if (!persona) throw notFound("Persona");
  await audit(services, { actor: by.operator, action: `rate:${rating}`, targetType: "persona", targetId: persona.id, subjectUserId: persona.creator_id, reason: by.reason });
  return persona;
}
