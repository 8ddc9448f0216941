import { notLive } from "../http/router.ts";

// API keys: both creation forms, list, revoke. Being built.
export const { api_keys_create, api_keys_list, api_keys_revoke, api_keys_create_simple } = notLive("auth", [
  "api_keys_create", "api_keys_list", "api_keys_revoke", "api_keys_create_simple",
]);
