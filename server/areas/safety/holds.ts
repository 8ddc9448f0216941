import type { Task, TaskList } from "graphile-worker";
import { v7 as uuidv7 } from "uuid";
import { isUniqueViolation } from "../../toolkit/db/rows.ts";
import { MODERATION_HOLD_TASK, type HeldContent } from "../../toolkit/moderation.ts";
import type { Services } from "../../toolkit/services.ts";
import { audit } from "./audit.ts";
import { recordSafetyEvent, safetyEventsRecipient } from "./events.ts";
import { eventData } from "./reports.ts";
import { newAction } from "./review.ts";
import { insertAction, insertReport, ONE_STANDING_ACTION } from "./store.ts";
import { currentState } from "./targets.ts";

// Content the moderation provider flagged and its area saved hidden (toolkit/moderation.ts) enters
// the review queue here: a report of the provider's (no reporter) with the content's snapshot, and
// a `hold` on it, which its owner sees and may appeal and an operator releases (dismiss) or
// confirms (take down).

/** Queues the held content for review; nothing happens for content gone meanwhile or already held. */
export async function recordHold(services: Services, held: HeldContent): Promise<void> {
  const target = { type: held.targetType, id: held.targetId };
  const snapshot = await currentState(services, target);
  if (!snapshot) return;
  const now = services.now();
  const about = held.flag.categories.length ? `: ${held.flag.categories.join(", ")}` : "";
  const reason = `Held for review: flagged by the moderation provider (${held.flag.provider})${about}`;
  const recipient = await safetyEventsRecipient(services);
  try {
    await services.db.knex.transaction(async (trx) => {
      const report = await insertReport(trx, {
        id: uuidv7(),
        reporter_id: null,
        target_type: held.targetType,
        target_id: held.targetId,
        target_owner_id: held.ownerId,
        reason: "other",
        details: reason,
        snapshot: { ...snapshot, moderation: held.flag },
        status: "open",
        resolution: null,
        resolved_by: null,
        resolved_at: null,
        created_at: now,
      });
      const by = { operator: `moderation:${held.flag.provider}`, reason };
      const action = await insertAction(trx, newAction("hold", { type: held.targetType, id: held.targetId }, held.ownerId, by, report.id, now));
      await recordSafetyEvent(trx, recipient, "report.created", eventData(report), now);
      await recordSafetyEvent(trx, recipient, "content.taken_down", { action_id: action.id, target_type: held.targetType, target_id: held.targetId, kind: "hold", reason }, now);
      await audit(services, { actor: `moderation:${held.flag.provider}`, action: "hold", targetType: held.targetType, targetId: held.targetId, subjectUserId: held.ownerId, reason, reportId: report.id, actionId: action.id }, trx);
    });
  } catch (error) {
    // Held again before its first hold was reviewed: that one stands.
    if (!isUniqueViolation(error, ONE_STANDING_ACTION)) throw error;
  }
}

export function holdTasks(services: Services): TaskList {
  const task: Task = async (payload) => recordHold(services, payload as HeldContent);
  return { [MODERATION_HOLD_TASK]: task };
}
