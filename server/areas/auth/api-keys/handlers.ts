import type { components } from "../../../../generated/openapi.d.ts";
import type { Handler, HandlerMap } from "../../../toolkit/http/router.ts";
import { createApiKey, FINE_SCOPES, listApiKeys, revokeApiKey, SIMPLE_SCOPES } from "./service.ts";
import { createdKey, revokedKey, toApiKey } from "./views.ts";

const api_keys_create: Handler<"api_keys_create"> = async ({ services, principal, body }) => {
  const { row, key } = await createApiKey(services, principal, body, FINE_SCOPES);
  return { status: 201, body: { ...createdKey<components["schemas"]["ApiKeyScope"]>(row, key), last_used_at: null } };
};

const api_keys_create_simple: Handler<"api_keys_create_simple"> = async ({ services, principal, body }) => {
  const { row, key } = await createApiKey(services, principal, body, SIMPLE_SCOPES);
  return { status: 201, body: createdKey<components["schemas"]["SimpleApiKeyScope"]>(row, key) };
};

const api_keys_list: Handler<"api_keys_list"> = async ({ services, principal }) => ({
  status: 200,
  body: { data: (await listApiKeys(services, principal.userId)).map(toApiKey) },
});

const api_keys_revoke: Handler<"api_keys_revoke"> = async ({ services, principal, params }) => ({
  status: 200,
  body: revokedKey(await revokeApiKey(services, principal.userId, params.id)),
});

export const handlers = { api_keys_create, api_keys_create_simple, api_keys_list, api_keys_revoke } satisfies Partial<HandlerMap>;
