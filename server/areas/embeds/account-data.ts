import type { AccountDataSection } from "../../toolkit/account-data.ts";
import { embedConversationsOfUser, settingsOfUser } from "./store.ts";

/**
 * The embeds in the owner's data export: each embedded persona's settings, and which of the
 * owner's conversations are visitors' (the conversations themselves, with their messages, are in
 * the conversations section: they are the owner's). The purge needs nothing of its own: every row
 * goes with the owner's personas and account (foreign keys), visitors' conversations included.
 */
export const embedAccountData: AccountDataSection[] = [
  {
    key: "embeds",
    tables: ["persona_embeds", "embed_conversations"],
    async exportRows({ knex, userId }) {
      const [settings, conversations] = await Promise.all([settingsOfUser(knex, userId), embedConversationsOfUser(knex, userId)]);
      return settings.map((row) => ({
        persona_id: row.persona_id,
        enabled: row.enabled,
        allowed_origins: row.allowed_origins,
        daily_message_cap: row.daily_message_cap,
        created_at: row.created_at.toISOString(),
        updated_at: row.updated_at.toISOString(),
        visitor_conversations: conversations
          .filter((conversation) => conversation.persona_id === row.persona_id)
          .map((conversation) => ({
            conversation_id: conversation.conversation_id,
            guest_id: conversation.guest_id,
            visitor_messages: conversation.visitor_messages,
            started_at: conversation.started_at.toISOString(),
            last_message_at: conversation.last_message_at?.toISOString() ?? null,
          })),
      }));
    },
  },
  {
    key: "embed_visitors",
    tables: ["embed_guests", "embed_daily_usage"],
    withheld: "visitors' token hashes (credentials of anonymous visitors) and the daily message counters of the cap: bookkeeping, not the owner's data",
  },
];
