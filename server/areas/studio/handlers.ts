import type { Handler, HandlerMap } from "../../toolkit/http/router.ts";
import * as studio from "./service.ts";
import { toPublication } from "../marketplace/index.ts";
import { toVariant, toVersion } from "./views.ts";

const studio_list_versions: Handler<"studio_list_versions"> = async ({ services, principal, params }) => {
  const rows = await studio.versionsOf(services, principal.userId, params.persona_id);
  return { status: 200, body: { data: rows.map(toVersion), total: rows.length } };
};

const studio_create_version: Handler<"studio_create_version"> = async ({ services, principal, params, body }) => ({
  status: 201,
  body: toVersion(await studio.createVersion(services, principal.userId, params.persona_id, body)),
});

const studio_activate_version: Handler<"studio_activate_version"> = async ({ services, principal, params }) => ({
  status: 200,
  body: toVersion(await studio.activate(services, principal.userId, params.persona_id, params.version_id)),
});

const studio_publish: Handler<"studio_publish"> = async ({ services, principal, params, body }) => {
  const { listing, url } = await studio.publish(services, principal.userId, params.persona_id, body);
  return { status: 200, body: toPublication(listing, url) };
};

const studio_list_variants: Handler<"studio_list_variants"> = async ({ services, principal, params }) => {
  const rows = await studio.variantsOf(services, principal.userId, params.persona_id);
  return { status: 200, body: { data: rows.map(toVariant), total: rows.length } };
};

const studio_create_variant: Handler<"studio_create_variant"> = async ({ services, principal, params, body }) => ({
  status: 201,
  body: toVariant(await studio.addVariant(services, principal.userId, params.persona_id, body)),
});

const studio_update_variant: Handler<"studio_update_variant"> = async ({ services, principal, params, body }) => ({
  status: 200,
  body: toVariant(await studio.changeVariant(services, principal.userId, params.persona_id, params.variant_id, body)),
});

const studio_test_chat: Handler<"studio_test_chat"> = async ({ services, principal, params, body }) => {
  const result = await studio.runTestChat(services, principal.userId, params.persona_id, body);
  return { status: 200, body: { ...result, created_at: result.created_at.toISOString() } };
};

const studio_analytics: Handler<"studio_analytics"> = async ({ services, principal, params, query }) => ({
  status: 200,
  body: await studio.personaAnalytics(services, principal.userId, params.persona_id, query.period ?? "30d"),
});

export const handlers = {
  studio_analytics,
  studio_test_chat,
  studio_list_variants,
  studio_create_variant,
  studio_update_variant,
  studio_publish,
  studio_list_versions,
  studio_create_version,
  studio_activate_version,
} satisfies Partial<HandlerMap>;
