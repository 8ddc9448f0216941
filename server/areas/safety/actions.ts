import { conflict, notFound } from "../../toolkit/http/error-catalogue.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";
import { isUuid } from "../../toolkit/http/text.ts";
import type { Services } from "../../toolkit/services.ts";
import { audit } from "./audit.ts";
import { findAction, listActionsOf, recordAppeal, type ActionRow } from "./store.ts";

// The owner's side of the actions on their content (issue 41): what was done and why, and the one
// appeal of a takedown or hold. Content taken down stays its owner's to read, change or delete.

export async function listOwnActions(services: Services, ownerId: string, window: PageWindow) {
  return listActionsOf(services.db.knex, ownerId, window);
}

/** Appeals a takedown or hold of the caller's content, once; someone else's action is 404. */
export async function appeal(services: Services, ownerId: string, actionId: string, message: string): Promise<ActionRow> {
  const now = services.now();
  const appealed = isUuid(actionId) ? await recordAppeal(services.db.knex, actionId, ownerId, message.trim(), now) : undefined;
  if (appealed) {
    await audit(services, { actor: "owner", action: "appeal", targetType: appealed.target_type, targetId: appealed.target_id, subjectUserId: ownerId, reason: message.trim(), actionId: appealed.id });
    return appealed;
  }
  const action = isUuid(actionId) ? await findAction(services.db.knex, actionId) : undefined;
  if (!action || action.owner_id !== ownerId) throw notFound("Moderation action");
  if (action.kind !== "takedown" && action.kind !== "hold") throw conflict(`A ${action.kind} cannot be appealed`);
  if (action.reverted_at) throw conflict("This action was already reverted");
  throw conflict("This action was already appealed: an action can be appealed once");
}
