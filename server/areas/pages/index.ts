// The pages area's public surface: the person-facing HTML pages the service's links lead to when
// no front end of the operator's own takes them (APP_BASE_URL), and their oEmbed operation.
// docs/design/pages.md. The page layer (the shell, the policy, escaping, the stylesheet) is
// html.ts, document.ts, policy.ts and stylesheet.ts, for any page the service serves.
import { defineArea } from "../../toolkit/area.ts";
import { handlers } from "./handlers.ts";

export { html, trusted, Html, type Part } from "./html.ts";
export { renderDocument, SITE_NAME, type PageDocument } from "./document.ts";
export { contentSecurityPolicy, pageHeaders, sendPage, type PagePolicy } from "./policy.ts";
export { sendMessage, sendNotFound } from "./status-pages.ts";

export const area = defineArea({ name: "pages", handlers, tables: [] });
