import type { Knex } from "knex";
import { findAccount } from "../auth/index.ts";
import { recordEvent } from "../../toolkit/events/outbox.ts";
import type { Services } from "../../toolkit/services.ts";

// The webhook events of trust and safety (issue 41, docs/adr/0355): `report.created`,
// `content.taken_down` and `account.suspended`, for an operator's own tooling. Webhooks belong to
// accounts, and these events are about other people's content, so they are recorded for one
// account only, the one SAFETY_EVENTS_ACCOUNT names: its webhooks subscribed to them receive them.
// Without the setting (or with no such live account) nothing is recorded.

export type SafetyEventType = "report.created" | "content.taken_down" | "account.suspended";

/**
 * The account the events go to, if any. Looked up before the transaction that records them: on the
 * embedded database a second connection would wait for that transaction, which waits for it.
 */
export async function safetyEventsRecipient(services: Services): Promise<string | undefined> {
  const name = services.config.safety.eventsAccount;
  if (!name) return undefined;
  const account = await findAccount(services, name);
  if (account && !account.deleted_at) return account.id;
  services.log.warn({ eventsAccount: name }, "SAFETY_EVENTS_ACCOUNT names no live account: safety events are not recorded");
  return undefined;
}

/** Records the event for `recipient` (safetyEventsRecipient) in the transaction of the change it describes. */
export async function recordSafetyEvent(knex: Knex, recipient: string | undefined, type: SafetyEventType, data: Record<string, unknown>, at: Date): Promise<void> {
  if (recipient) await recordEvent(knex, { userId: recipient, type, data, at });
}
