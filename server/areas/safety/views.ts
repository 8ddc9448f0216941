import type { components } from "../../../generated/openapi.d.ts";
import type { ActionRow, ReportRow } from "./store.ts";

type S = components["schemas"];

/** A report as its reporter sees it: never the snapshot, the owner or the operator. */
export function toReport(row: ReportRow): S["Report"] {
  return {
    id: row.id,
    target_type: row.target_type,
    target_id: row.target_id,
    reason: row.reason as S["ReportReason"],
    details: row.details,
    status: row.status,
    resolution: row.resolution,
    created_at: row.created_at.toISOString(),
    resolved_at: row.resolved_at?.toISOString() ?? null,
  };
}

/** Whether the owner may appeal the action now: a standing takedown or hold, not appealed yet. */
export const isAppealable = (row: ActionRow) => (row.kind === "takedown" || row.kind === "hold") && !row.reverted_at && !row.appealed_at;

function appealStatus(row: ActionRow): S["AppealStatus"] {
  if (row.appeal_outcome === "upheld") return "upheld";
  return row.reverted_at ? "granted" : "pending";
}

/** An action as the owner of its target sees it: who took it stays the operators'. */
export function toAction(row: ActionRow): S["ModerationAction"] {
  return {
    id: row.id,
    kind: row.kind,
    target_type: row.target_type,
    target_id: row.target_id,
    reason: row.reason,
    created_at: row.created_at.toISOString(),
    active: row.reverted_at === null,
    reverted_at: row.reverted_at?.toISOString() ?? null,
    appealable: isAppealable(row),
    ...(row.appeal_message && row.appealed_at ? { appeal: { message: row.appeal_message, appealed_at: row.appealed_at.toISOString(), status: appealStatus(row) } } : {}),
  };
}
