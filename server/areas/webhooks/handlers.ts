import { pageBody, pageWindow } from "../../toolkit/http/paging.ts";
import type { Handler, HandlerMap } from "../../toolkit/http/router.ts";
import { createWebhook, deleteWebhook, listDeliveries, listWebhooks, redeliver, updateWebhook } from "./service.ts";
import { toCreated, toDelivery, toWebhook } from "./views.ts";

const webhooks_create: Handler<"webhooks_create"> = async ({ services, principal, body }) => {
  const { row, secret } = await createWebhook(services, principal.userId, body);
  return { status: 201, body: toCreated(row, secret) };
};

const webhooks_list: Handler<"webhooks_list"> = async ({ services, principal }) => {
  const rows = await listWebhooks(services, principal.userId);
  return { status: 200, body: { data: rows.map(toWebhook), total: rows.length } };
};

const webhooks_update: Handler<"webhooks_update"> = async ({ services, principal, params, body }) => ({
  status: 200,
  body: toWebhook(await updateWebhook(services, principal.userId, params.id, body)),
});

const webhooks_delete: Handler<"webhooks_delete"> = async ({ services, principal, params }) => ({
  status: 200,
  body: { id: await deleteWebhook(services, principal.userId, params.id), deleted: true },
});

const webhooks_list_deliveries: Handler<"webhooks_list_deliveries"> = async ({ services, principal, params, query }) => {
  const window = pageWindow(query);
  return { status: 200, body: pageBody(await listDeliveries(services, principal.userId, params.id, window), window, toDelivery) };
};

const webhooks_redeliver: Handler<"webhooks_redeliver"> = async ({ services, principal, params }) => ({
  status: 202,
  body: toDelivery(await redeliver(services, principal.userId, params.id, params.delivery_id)),
});

export const handlers = {
  webhooks_create,
  webhooks_list,
  webhooks_update,
  webhooks_delete,
  webhooks_list_deliveries,
  webhooks_redeliver,
} satisfies Partial<HandlerMap>;
