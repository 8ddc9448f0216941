import { archiveRows, type AccountDataSection, type ArchiveRow } from "../../toolkit/account-data.ts";

/** Groups rows by their `conversation_id`. */
function byConversation(rows: ArchiveRow[]): Map<string, ArchiveRow[]> {
  const grouped = new Map<string, ArchiveRow[]>();
  for (const row of rows) {
    const id = String(row.conversation_id);
    grouped.set(id, [...(grouped.get(id) ?? []), row]);
  }
  return grouped;
}

/**
 * Each conversation with all its messages, oldest first, on every branch (`parent_id` tells the
 * tree), and the rolling summaries of its long paths.
 */
export const conversationAccountData: AccountDataSection[] = [
  {
    key: "conversations",
    tables: ["conversations", "messages", "conversation_summaries"],
    async exportRows({ knex, userId }) {
      const conversations = await archiveRows(knex, "conversations", "user_id", [userId]);
      const ids = conversations.map((row) => String(row.id));
      const messages = byConversation(await archiveRows(knex, "messages", "conversation_id", ids));
      const summaries = byConversation(await archiveRows(knex, "conversation_summaries", "conversation_id", ids));
      return conversations.map((conversation) => ({
        ...conversation,
        messages: messages.get(String(conversation.id)) ?? [],
        summaries: summaries.get(String(conversation.id)) ?? [],
      }));
    },
  },
];
