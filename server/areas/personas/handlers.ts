import { pageBody, pageWindow } from "../../toolkit/http/paging.ts";
import type { Handler, HandlerMap } from "../../toolkit/http/router.ts";
import { createPersona, deletePersona, explorePersonas, listOwnPersonas, requireVisiblePersona, updatePersona } from "./service.ts";
import { toExplorePersona, toPersona, toSummary } from "./views.ts";

const personas_create: Handler<"personas_create"> = async ({ services, principal: { userId }, body }) => {
  return { status: 201, body: toPersona(await createPersona(services, userId, body), userId, services.config) };
};

const personas_get: Handler<"personas_get"> = async ({ services, principal: { userId }, params }) => {
  return { status: 200, body: toPersona(await requireVisiblePersona(services, userId, params.id), userId, services.config) };
};

const personas_update: Handler<"personas_update"> = async ({ services, principal: { userId }, params, body }) => {
  return { status: 200, body: toPersona(await updatePersona(services, userId, params.id, body), userId, services.config) };
};

const personas_delete: Handler<"personas_delete"> = async ({ services, principal, params }) => ({
  status: 200,
  body: { id: await deletePersona(services, principal.userId, params.id), deleted: true },
});

const personas_list: Handler<"personas_list"> = async ({ services, principal, query }) => {
  const window = pageWindow(query);
  const page = await listOwnPersonas(services, principal.userId, query.sort ?? "created_at", window);
  return { status: 200, body: pageBody(page, window, (row) => toSummary(row, services.config)) };
};

const personas_explore: Handler<"personas_explore"> = async ({ services, principal, query }) => {
  const window = pageWindow(query);
  const page = await explorePersonas(services, principal.userId, { category: query.category, q: query.q }, query.sort ?? "popular", window);
  return { status: 200, body: pageBody(page, window, (row) => toExplorePersona(row, services.config)) };
};

export const handlers = {
  personas_create,
  personas_get,
  personas_update,
  personas_delete,
  personas_list,
  personas_explore,
} satisfies Partial<HandlerMap>;
