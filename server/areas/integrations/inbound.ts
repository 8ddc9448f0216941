import { addJobIn } from "../../toolkit/db/jobs.ts";
import { notFound, unauthorized } from "../../toolkit/http/error-catalogue.ts";
import { isUuid } from "../../toolkit/http/text.ts";
import type { Services } from "../../toolkit/services.ts";
import { REPLY_TASK, type ReplyPayload } from "./jobs.ts";
import { fromSlack, fromTelegram, shouldAnswer, type InboundMessage } from "./messages.ts";
import { callbackSecretOf } from "./service.ts";
import { messengerSecretMatches, slackSignatureValid } from "./signatures.ts";
import { findIntegration, takeEvent, type IntegrationRow } from "./store.ts";

const refused = () => unauthorized("The callback's signature or secret token is missing or wrong");

async function integrationFor(services: Services, id: string, platform: IntegrationRow["platform"]): Promise<IntegrationRow> {
  const row = isUuid(id) ? await findIntegration(services.db.knex, id) : undefined;
  if (!row || row.platform !== platform) throw notFound("Integration");
  return row;
}

/**
 * A message the bot should answer is queued once: its platform event ids are taken and the reply
 * job queued in one transaction, so a retried callback (or a gateway replay) finds the ids taken.
 * Replies of one channel run in order, one at a time (one job queue per channel).
 */
export async function acceptInbound(services: Services, row: IntegrationRow, message: InboundMessage): Promise<"queued" | "ignored" | "duplicate"> {
  if (!shouldAnswer(row, message)) return "ignored";
  const payload: ReplyPayload = {
    integration_id: row.id,
    channel_id: message.channelId,
    reply_to: message.replyTo,
    text: message.text,
    author: message.authorName,
    direct: message.direct,
  };
  return services.db.knex.transaction(async (trx) => {
    if (!(await takeEvent(trx, row.id, message.eventIds, services.now()))) return "duplicate";
    await addJobIn(trx, REPLY_TASK, { ...payload }, { maxAttempts: 3, queueName: `integration:${row.id}:${message.channelId}` });
    return "queued";
  });
}

/** A messenger webhook update: the secret token first (401, nothing processed), then the message. */
export async function receiveMessengerUpdate(services: Services, id: string, secretToken: string | undefined, update: Record<string, unknown>): Promise<void> {
  const row = await integrationFor(services, id, "messenger");
  const secret = await callbackSecretOf(services, row);
  if (!secret || !messengerSecretMatches(secretToken, secret)) throw refused();
  const message = fromTelegram(update, { id: row.bot_user_id, username: row.bot_username });
  if (message) await acceptInbound(services, row, message);
}

/**
 * A workspace Events API callback: the v0 signature over the raw body first (401, nothing
 * processed), then `url_verification` (answers the challenge) or the event.
 */
export async function receiveWorkspaceEvent(
  services: Services,
  id: string,
  signed: { signature: string | undefined; timestamp: string | undefined; rawBody: Buffer | undefined },
  callback: Record<string, unknown>,
): Promise<string | undefined> {
  const row = await integrationFor(services, id, "workspace");
  const secret = await callbackSecretOf(services, row);
  if (!secret || !slackSignatureValid(signed, secret, services.now())) throw refused();
  if (callback.type === "url_verification") return typeof callback.challenge === "string" ? callback.challenge : "";
  if (callback.type !== "event_callback") return undefined;
  const message = fromSlack(callback, { id: row.bot_user_id, username: row.bot_username });
  if (message) await acceptInbound(services, row, message);
  return undefined;
}
