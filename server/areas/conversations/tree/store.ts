import type { Knex } from "knex";
import { alternativeColumns, pathCte } from "./path-sql.ts";
import { CONVERSATION_COLUMNS, MESSAGE_COLUMNS, type ConversationRow, type MessageRow } from "../store.ts";

/** A message's place in its conversation tree, without its text. */
export interface TreeNode {
  id: string;
  parent_id: string | null;
  depth: number;
  role: "user" | "assistant";
  created_at: Date;
}

/** Every message of the conversation as a tree node, oldest first. */
export async function treeNodes(knex: Knex, conversationId: string): Promise<TreeNode[]> {
  return knex("messages")
    .select("id", "parent_id", "depth", "role", "created_at")
    .where({ conversation_id: conversationId })
    .orderBy([{ column: "created_at", order: "asc" }, { column: "id", order: "asc" }]);
}

/** Messages of the conversation by id, with their alternatives. */
export async function messagesById(knex: Knex, conversationId: string, ids: string[]): Promise<MessageRow[]> {
  if (ids.length === 0) return [];
  return knex("messages as m")
    .select([...MESSAGE_COLUMNS].map((column) => `m.${column}`))
    .select(knex.raw(alternativeColumns("m")))
    .where("m.conversation_id", conversationId)
    .whereIn("m.id", ids);
}

/**
 * Makes `leaf` the conversation's active leaf and its depth the message count, unless the
 * conversation is gone. Answers the updated conversation.
 */
export async function setActiveLeaf(knex: Knex, conversationId: string, leaf: { id: string; depth: number }): Promise<ConversationRow | undefined> {
  const [row] = await knex("conversations")
    .where({ id: conversationId })
    .update({ active_message_id: leaf.id, message_count: leaf.depth })
    .returning([...CONVERSATION_COLUMNS]);
  return row as ConversationRow | undefined;
}

/** A path's messages with text, oldest first: from the first message to `leafId`. */
export async function pathMessages(knex: Knex, leafId: string): Promise<Pick<MessageRow, "id" | "role" | "content" | "content_tokens" | "depth">[]> {
  const result = await knex.raw<{ rows: Pick<MessageRow, "id" | "role" | "content" | "content_tokens" | "depth">[] }>(
    `WITH RECURSIVE ${pathCte("path", ["id", "parent_id", "role", "content", "content_tokens", "depth"], "?")}
     SELECT id, role, content, content_tokens, depth FROM path ORDER BY depth`,
    [leafId],
  );
  return result.rows;
}

/** What the summary job needs of a conversation: its active leaf and its persona's model. */
export async function summarySource(
  knex: Knex,
  conversationId: string,
): Promise<{ active_message_id: string | null; model: string; user_id: string; provider_connection_id: string | null } | undefined> {
  return knex("conversations as c")
    .join("personas as p", "p.id", "c.persona_id")
    .select("c.active_message_id", "p.model", "c.user_id", "p.provider_connection_id")
    .where("c.id", conversationId)
    .first();
}

export interface SummaryRow {
  conversation_id: string;
  through_message_id: string;
  through_depth: number;
  content: string;
  content_tokens: number;
  created_at: Date;
}

/** The conversation's summaries that end at one of `messageIds` (a path), latest first. */
export async function summariesOn(knex: Knex, conversationId: string, messageIds: string[]): Promise<SummaryRow[]> {
  if (messageIds.length === 0) return [];
  return knex("conversation_summaries")
    .select("*")
    .where({ conversation_id: conversationId })
    .whereIn("through_message_id", messageIds)
    .orderBy("through_depth", "desc");
}

/** Stores a summary; a second job that wrote the same one first wins. */
export async function insertSummary(knex: Knex, row: SummaryRow): Promise<void> {
  await knex("conversation_summaries").insert(row).onConflict(["conversation_id", "through_message_id"]).ignore();
}

/**
 * Takes the conversation's reply lease unless another reply holds it; answers whether it was taken.
 * The lease ends by itself at `until`, so a process that died holding it blocks no one for long.
 */
export async function takeReplyLease(knex: Knex, conversationId: string, now: Date, until: Date): Promise<boolean> {
  const taken = await knex("conversations")
    .where({ id: conversationId })
    .andWhere((q) => q.whereNull("reply_lease_until").orWhere("reply_lease_until", "<", now))
    .update({ reply_lease_until: until });
  return taken > 0;
}

export async function releaseReplyLease(knex: Knex, conversationId: string, until: Date): Promise<void> {
  await knex("conversations").where({ id: conversationId, reply_lease_until: until }).update({ reply_lease_until: null });
}
