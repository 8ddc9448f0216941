// The models area's public surface (issue 40): the model registry as callers see it
// (`GET /v1/models`), users' own provider connections (bring your own key), and what the chat
// path's statements read of them.
import { defineArea } from "../../toolkit/area.ts";
import { modelAccountData } from "./account-data.ts";
import { handlers } from "./handlers.ts";

export { checkPersonaConnection, openConnection, replyConnectionBindings, replyConnectionFor, type ReplyConnection } from "./service.ts";
export { QUOTA_NOT_EXEMPT, REPLY_CONNECTION_CTES, REPLY_CONNECTION_SELECT, type ReplyConnectionRow } from "./store.ts";

export const area = defineArea({ name: "models", handlers, accountData: modelAccountData, tables: ["provider_connections"] });
