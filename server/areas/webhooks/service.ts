import { v7 as uuidv7 } from "uuid";
import type { components } from "../../../generated/openapi.d.ts";
import { conflict, invalidField, notFound } from "../../toolkit/http/error-catalogue.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";
import { isUuid } from "../../toolkit/http/text.ts";
import { addJobIn } from "../../toolkit/db/jobs.ts";
import type { Services } from "../../toolkit/services.ts";
import { checkOutboundUrl } from "../../toolkit/providers/address-guard.ts";
import { DELIVER_TASK, keepSweepScheduled } from "./delivery.ts";
import { generateSecret, secretBox } from "./secrets.ts";
import {
  countWebhooksOf, deleteWebhookOf, findDelivery, findWebhookOf, insertRedelivery, insertWebhook, listWebhooksOf, pageDeliveries,
  updateWebhookOf, type DeliveryRow, type WebhookChanges, type WebhookRow,
} from "./store.ts";

type WebhookCreate = components["schemas"]["WebhookCreate"];
type WebhookUpdate = components["schemas"]["WebhookUpdate"];

/**
 * Webhooks one user may have: each multiplies the deliveries of every event
 * (docs/adr/0205-webhooks-can-be-paused-and-have-a-delivery-log-and.md).
 */
export const MAX_WEBHOOKS_PER_USER = 20;

const badUrl = (message: string) => invalidField("/body/url", message);

/**
 * The registration check of a URL: HTTPS, and a host whose every address is public (unless the
 * development setting allows HTTP and private addresses). Deliveries check again at connection time.
 */
export async function checkWebhookUrl(services: Services, raw: string): Promise<void> {
  await checkOutboundUrl(raw, services.config.webhooks.allowPrivateUrls, badUrl);
}

/** The caller's webhook; another user's, an unknown id or a malformed one are all 404. */
export async function requireOwnWebhook(services: Services, userId: string, id: string): Promise<WebhookRow> {
  const row = isUuid(id) ? await findWebhookOf(services.db.knex, userId, id) : undefined;
  if (!row) throw notFound("Webhook");
  return row;
}

/** Registers a webhook; the secret (given or generated) is answered this once and kept encrypted. */
export async function createWebhook(services: Services, userId: string, input: WebhookCreate): Promise<{ row: WebhookRow; secret: string }> {
  await checkWebhookUrl(services, input.url);
  const knex = services.db.knex;
  const secret = input.secret ?? generateSecret();
  const sealed = (await secretBox(knex, services.config.secretsKey)).seal(secret);
  const now = services.now();
  const row = await knex.transaction(async (trx) => {
    // Serialises this user's registrations so that concurrent ones cannot pass the limit together.
    await trx("users").where({ id: userId }).forUpdate().first("id");
    if ((await countWebhooksOf(trx, userId)) >= MAX_WEBHOOKS_PER_USER) {
      throw conflict(`An account may have at most ${MAX_WEBHOOKS_PER_USER} webhooks; delete one first`);
    }
    return insertWebhook(trx, {
      id: uuidv7(),
      user_id: userId,
      url: input.url,
      events: input.events,
      secret_encrypted: sealed,
      active: true,
      consecutive_failures: 0,
      disabled_at: null,
      created_at: now,
      updated_at: now,
    });
  });
  return { row, secret };
}

export async function listWebhooks(services: Services, userId: string): Promise<WebhookRow[]> {
  return listWebhooksOf(services.db.knex, userId);
}

/** Changes only the supplied fields. Turning a webhook back on starts its failure count afresh. */
export async function updateWebhook(services: Services, userId: string, id: string, input: WebhookUpdate): Promise<WebhookRow> {
  const current = await requireOwnWebhook(services, userId, id);
  if (input.url !== undefined) await checkWebhookUrl(services, input.url);
  const changes: WebhookChanges = {};
  if (input.url !== undefined) changes.url = input.url;
  if (input.events !== undefined) changes.events = input.events;
  if (input.active === true && !current.active) Object.assign(changes, { active: true, consecutive_failures: 0, disabled_at: null });
  if (input.active === false && current.active) changes.active = false;
  if (Object.keys(changes).length === 0) return current;
  const row = await updateWebhookOf(services.db.knex, userId, current.id, { ...changes, updated_at: services.now() });
  if (!row) throw notFound("Webhook");
  return row;
}

export async function deleteWebhook(services: Services, userId: string, id: string): Promise<string> {
  const current = await requireOwnWebhook(services, userId, id);
  if (!(await deleteWebhookOf(services.db.knex, userId, current.id))) throw notFound("Webhook");
  return current.id;
}

export async function listDeliveries(services: Services, userId: string, id: string, window: PageWindow) {
  const webhook = await requireOwnWebhook(services, userId, id);
  return pageDeliveries(services.db.knex, webhook.id, window);
}

/** Sends a logged delivery's event again as a new delivery, queued at once. */
export async function redeliver(services: Services, userId: string, id: string, deliveryId: string): Promise<DeliveryRow> {
  const webhook = await requireOwnWebhook(services, userId, id);
  const original = isUuid(deliveryId) ? await findDelivery(services.db.knex, webhook.id, deliveryId) : undefined;
  if (!original) throw notFound("Delivery");
  if (!webhook.active) throw conflict("The webhook is not active; turn it on with an update first");
  const row = await services.db.knex.transaction(async (trx) => {
    const inserted = await insertRedelivery(trx, original, services.now());
    await addJobIn(trx, DELIVER_TASK, { delivery_id: inserted.id }, { maxAttempts: 3 });
    return inserted;
  });
  await keepSweepScheduled(services);
  return row;
}
