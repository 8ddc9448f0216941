import { v7 as uuidv7 } from "uuid";
import type { components } from "../../../generated/openapi.d.ts";
import { isUniqueViolation } from "../../toolkit/db/rows.ts";
import { conflict, invalidField, notFound, rateLimited } from "../../toolkit/http/error-catalogue.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";
import { isUuid } from "../../toolkit/http/text.ts";
import type { Services } from "../../toolkit/services.ts";
import { recordSafetyEvent, safetyEventsRecipient } from "./events.ts";
import { insertReport, listReportsOf, findReport, ONE_OPEN_REPORT, reportsSince, type ReportRow } from "./store.ts";
import { reportableTarget } from "./targets.ts";

// A user's reports (issue 41): filed on what they can see, one open per target, at most
// REPORTS_PER_HOUR an hour, with a snapshot of what the target showed; the reporter reads their
// own reports and nobody else's.

type ReportCreate = components["schemas"]["ReportCreate"];

const HOUR_MS = 3_600_000;

const TARGET_NAMES: Record<ReportCreate["target_type"], string> = {
  persona: "Persona",
  listing: "Listing",
  review: "Review",
  profile: "User",
  room_message: "Room message",
  conversation_message: "Message",
};

/** 429 once the reporter filed REPORTS_PER_HOUR reports within the last hour; Retry-After when the oldest of them ages out. */
async function checkRate(services: Services, reporterId: string, now: Date): Promise<void> {
  const limit = services.config.safety.reportsPerHour;
  const { count, oldest } = await reportsSince(services.db.knex, reporterId, new Date(now.getTime() - HOUR_MS));
  if (count < limit) return;
  const retryAfter = Math.max(1, Math.ceil(((oldest?.getTime() ?? now.getTime()) + HOUR_MS - now.getTime()) / 1000));
  throw rateLimited(`At most ${limit} reports an hour; retry in ${retryAfter} s`, retryAfter);
}

export async function fileReport(services: Services, reporterId: string, input: ReportCreate): Promise<ReportRow> {
  const now = services.now();
  await checkRate(services, reporterId, now);
  const target = await reportableTarget(services, reporterId, input.target_type, input.target_id);
  if (!target) throw notFound(TARGET_NAMES[input.target_type]);
  if (target.ownerId === reporterId) throw invalidField("/body/target_id", "is your own content", "You cannot report your own content");
  const recipient = await safetyEventsRecipient(services);
  try {
    return await services.db.knex.transaction(async (trx) => {
      const report = await insertReport(trx, {
        id: uuidv7(),
        reporter_id: reporterId,
        target_type: input.target_type,
        target_id: input.target_id.toLowerCase(),
        target_owner_id: target.ownerId,
        reason: input.reason,
        details: input.details?.trim() || null,
        snapshot: target.snapshot,
        status: "open",
        resolution: null,
        resolved_by: null,
        resolved_at: null,
        created_at: now,
      });
      await recordSafetyEvent(trx, recipient, "report.created", eventData(report), now);
      return report;
    });
  } catch (error) {
    if (isUniqueViolation(error, ONE_OPEN_REPORT)) throw conflict("You already reported this and your report is still open", { report: "GET /v1/reports" });
    throw error;
  }
}

/** The data of a `report.created` event: what was reported and why, never who reported it. */
export function eventData(report: ReportRow): Record<string, unknown> {
  return { report_id: report.id, target_type: report.target_type, target_id: report.target_id, reason: report.reason, by_moderation_provider: report.reporter_id === null };
}

export async function listOwnReports(services: Services, reporterId: string, status: string | undefined, window: PageWindow) {
  return listReportsOf(services.db.knex, reporterId, status, window);
}

/** One of the caller's reports; anyone else's is 404. */
export async function getOwnReport(services: Services, reporterId: string, id: string): Promise<ReportRow> {
  const row = isUuid(id) ? await findReport(services.db.knex, id) : undefined;
  if (!row || row.reporter_id !== reporterId) throw notFound("Report");
  return row;
}
