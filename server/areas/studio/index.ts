// The creator studio's public surface: drafts, test chats, A/B variants and analytics.
import { defineArea } from "../../toolkit/area.ts";
import { studioAccountData } from "./account-data.ts";
import { handlers } from "./handlers.ts";

export { assignConversation } from "./variants.ts";

export const area = defineArea({ name: "studio", handlers, accountData: studioAccountData });
