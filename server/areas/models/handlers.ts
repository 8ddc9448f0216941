import type { Handler, HandlerMap } from "../../toolkit/http/router.ts";
import { modelRegistry } from "../../toolkit/models/index.ts";
import { createConnection, deleteConnection, listConnections, requireOwnConnection, updateConnection } from "./service.ts";
import { toConnection, toModelInfo } from "./views.ts";

const models_list: Handler<"models_list"> = async ({ services }) => {
  const registry = modelRegistry(services.config.llm);
  const data = registry.list().map((entry) => toModelInfo(registry, entry));
  return { status: 200, body: { data, total: data.length } };
};

const provider_connections_create: Handler<"provider_connections_create"> = async ({ services, principal, body }) => ({
  status: 201,
  body: toConnection(await createConnection(services, principal.userId, body)),
});

const provider_connections_list: Handler<"provider_connections_list"> = async ({ services, principal }) => {
  const rows = await listConnections(services, principal.userId);
  return { status: 200, body: { data: rows.map(toConnection), total: rows.length } };
};

const provider_connections_get: Handler<"provider_connections_get"> = async ({ services, principal, params }) => ({
  status: 200,
  body: toConnection(await requireOwnConnection(services, principal.userId, params.id)),
});

const provider_connections_update: Handler<"provider_connections_update"> = async ({ services, principal, params, body }) => ({
  status: 200,
  body: toConnection(await updateConnection(services, principal.userId, params.id, body)),
});

const provider_connections_delete: Handler<"provider_connections_delete"> = async ({ services, principal, params }) => ({
  status: 200,
  body: { id: await deleteConnection(services, principal.userId, params.id), deleted: true },
});

export const handlers = {
  models_list,
  provider_connections_create,
  provider_connections_list,
  provider_connections_get,
  provider_connections_update,
  provider_connections_delete,
} satisfies Partial<HandlerMap>;
