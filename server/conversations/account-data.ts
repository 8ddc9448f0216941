import { archiveRows, type AccountDataSection, type ArchiveRow } from "../account-data.ts";

/** Each conversation with all its messages, oldest first. */
export const conversationAccountData: AccountDataSection[] = [
  {
    key: "conversations",
    tables: ["conversations", "messages"],
    async exportRows({ knex, userId }) {
      const conversations = await archiveRows(knex, "conversations", "user_id", [userId]);
      const messages = await archiveRows(knex, "messages", "conversation_id", conversations.map((row) => String(row.id)));
      const byConversation = new Map<string, ArchiveRow[]>();
      for (const message of messages) {
        const id = String(message.conversation_id);
        byConversation.set(id, [...(byConversation.get(id) ?? []), message]);
      }
      return conversations.map((conversation) => ({ ...conversation, messages: byConversation.get(String(conversation.id)) ?? [] }));
    },
  },
];
