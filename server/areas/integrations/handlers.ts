import type { Handler, HandlerMap } from "../../toolkit/http/router.ts";
import { receiveMessengerUpdate, receiveWorkspaceEvent } from "./inbound.ts";
import { callbackUrl, connectIntegration, deleteIntegration, listIntegrations, requireOwnIntegration, testIntegration, updateIntegration } from "./service.ts";
import type { IntegrationRow } from "./store.ts";
import { toIntegration, toIntegrationDetail, toTestResult } from "./views.ts";
import type { Services } from "../../toolkit/services.ts";
import { rawBodyOf } from "../../toolkit/http/raw-body.ts";

/** Only the workspace app needs to be told its callback URL; the messenger webhook is registered by the server. */
const detail = (services: Services, row: IntegrationRow) => toIntegrationDetail(row, row.platform === "workspace" ? callbackUrl(services, row) : undefined);

const integrations_list: Handler<"integrations_list"> = async ({ services, principal }) => {
  const rows = await listIntegrations(services, principal.userId);
  return { status: 200, body: { data: rows.map(toIntegration), total: rows.length } };
};

const integrations_connect_forum: Handler<"integrations_connect_forum"> = async ({ services, principal, body }) => ({
  status: 201,
  body: detail(services, await connectIntegration(services, principal.userId, "forum", body)),
});

const integrations_connect_messenger: Handler<"integrations_connect_messenger"> = async ({ services, principal, body }) => ({
  status: 201,
  body: detail(services, await connectIntegration(services, principal.userId, "messenger", body)),
});

const integrations_connect_workspace: Handler<"integrations_connect_workspace"> = async ({ services, principal, body }) => ({
  status: 201,
  body: detail(services, await connectIntegration(services, principal.userId, "workspace", body)),
});

const integrations_get: Handler<"integrations_get"> = async ({ services, principal, params }) => ({
  status: 200,
  body: detail(services, await requireOwnIntegration(services, principal.userId, params.id)),
});

const integrations_update: Handler<"integrations_update"> = async ({ services, principal, params, body }) => ({
  status: 200,
  body: detail(services, await updateIntegration(services, principal.userId, params.id, body)),
});

const integrations_delete: Handler<"integrations_delete"> = async ({ services, principal, params }) => ({
  status: 200,
  body: { id: await deleteIntegration(services, principal.userId, params.id), deleted: true },
});

const integrations_test: Handler<"integrations_test"> = async ({ services, principal, params }) => {
  const { row, outcome } = await testIntegration(services, principal.userId, params.id);
  return { status: 200, body: toTestResult(row, outcome) };
};

const integrations_messenger_update: Handler<"integrations_messenger_update"> = async ({ services, params, req, body }) => {
  await receiveMessengerUpdate(services, params.id, req.get("x-telegram-bot-api-secret-token"), body);
  return { status: 200, body: { received: true } };
};

const integrations_workspace_event: Handler<"integrations_workspace_event"> = async ({ services, params, req, body }) => {
  const signed = { signature: req.get("x-slack-signature"), timestamp: req.get("x-slack-request-timestamp"), rawBody: rawBodyOf(req) };
  const challenge = await receiveWorkspaceEvent(services, params.id, signed, body);
  return { status: 200, body: { received: true, ...(challenge !== undefined ? { challenge } : {}) } };
};

export const handlers = {
  integrations_list,
  integrations_connect_forum,
  integrations_connect_messenger,
  integrations_connect_workspace,
  integrations_get,
  integrations_update,
  integrations_delete,
  integrations_test,
  integrations_messenger_update,
  integrations_workspace_event,
} satisfies Partial<HandlerMap>;
