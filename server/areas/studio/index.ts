// The creator studio's public surface: drafts, test chats, A/B variants and analytics.
import { defineArea } from "../../toolkit/area.ts";
import { studioAccountData } from "./account-data.ts";
import { handlers } from "./handlers.ts";

export { assignConversation } from "./variants.ts";
export { variantInstructionsSql, variantSettingsSql } from "./store.ts";

export const area = defineArea({ name: "studio", handlers, accountData: studioAccountData, tables: ["persona_variants", "variant_assignments", "persona_daily_messages", "persona_daily_senders", "persona_daily_users"] });
