import { notFound } from "../../../toolkit/http/error-catalogue.ts";
import type { PageWindow } from "../../../toolkit/http/paging.ts";
import { isUuid } from "../../../toolkit/http/text.ts";
import type { Services } from "../../../toolkit/services.ts";
import { isGreeting, shownMessages } from "../greetings.ts";
import { EMBEDDED_MESSAGES, requireOwnConversation } from "../service.ts";
import { recentMessages, type ConversationRow, type MessageRow } from "../store.ts";
import { messagesById, setActiveLeaf, treeNodes, type TreeNode } from "./store.ts";

export interface BranchRow {
  leaf: MessageRow;
  forkPointId: string | null;
  active: boolean;
  /** Messages on the branch from the first to the leaf, its greeting included. */
  messageCount: number;
}

/** The tree's leaves, newest first, and what each branch shares with the others. */
class Tree {
  readonly byId = new Map<string, TreeNode>();
  readonly children = new Map<string | null, TreeNode[]>();

  constructor(nodes: TreeNode[]) {
    for (const node of nodes) {
      this.byId.set(node.id, node);
      this.children.set(node.parent_id, [...(this.children.get(node.parent_id) ?? []), node]);
    }
  }

  leaves(): TreeNode[] {
    return [...this.byId.values()].filter((node) => !this.children.has(node.id)).reverse();
  }

  /** The newest leaf at or under `node`: the message itself when nothing follows it. */
  newestLeafUnder(node: TreeNode): TreeNode {
    const leaves: TreeNode[] = [];
    const stack = [node];
    while (stack.length > 0) {
      const current = stack.pop()!;
      const below = this.children.get(current.id);
      if (below) stack.push(...below);
      else leaves.push(current);
    }
    const at = (n: TreeNode) => new Date(n.created_at).getTime();
    return leaves.reduce((newest, leaf) => (at(leaf) > at(newest) || (at(leaf) === at(newest) && leaf.id > newest.id) ? leaf : newest));
  }

  /** The message after which the leaf's branch parts from another one; null when it never does. */
  forkPoint(leaf: TreeNode): string | null {
    let node = leaf;
    while (node.parent_id !== null && this.children.get(node.parent_id)!.length === 1) node = this.byId.get(node.parent_id)!;
    return node.parent_id;
  }
}

async function branchRows(services: Services, conversation: ConversationRow, tree: Tree, leaves: TreeNode[]): Promise<BranchRow[]> {
  const rows = await shownMessages(services, conversation.user_id, await messagesById(services.db.knex, conversation.id, leaves.map((leaf) => leaf.id)));
  const byId = new Map(rows.map((row) => [row.id, row]));
  // Every path of a conversation that was greeted starts at one of its greetings (depth 0).
  const greeted = [...tree.byId.values()].some(isGreeting);
  return leaves.map((leaf) => ({
    leaf: byId.get(leaf.id)!,
    forkPointId: tree.forkPoint(leaf),
    active: leaf.id === conversation.active_message_id,
    messageCount: leaf.depth + (greeted ? 1 : 0),
  }));
}

/** A page of the conversation's branches, newest leaf first. */
export async function listBranches(services: Services, userId: string, id: string, window: PageWindow): Promise<{ rows: BranchRow[]; total: number }> {
  const conversation = await requireOwnConversation(services, userId, id);
  const tree = new Tree(await treeNodes(services.db.knex, conversation.id));
  const leaves = tree.leaves();
  const page = leaves.slice(window.offset, window.offset + window.limit);
  return { rows: await branchRows(services, conversation, tree, page), total: leaves.length };
}

/** Makes the branch ending at `leafId` active; 404 unless it is a leaf of the caller's conversation. */
export async function activateBranch(services: Services, userId: string, id: string, leafId: string): Promise<BranchRow> {
  const conversation = await requireOwnConversation(services, userId, id);
  const tree = new Tree(await treeNodes(services.db.knex, conversation.id));
  const leaf = isUuid(leafId) ? tree.byId.get(leafId) : undefined;
  if (!leaf || tree.children.has(leaf.id)) throw notFound("Branch");
  const updated = (await setActiveLeaf(services.db.knex, conversation.id, leaf)) ?? conversation;
  const [row] = await branchRows(services, updated, tree, [leaf]);
  return row!;
}

/**
 * Continues from `messageId` (an alternative reply, an edited message): the newest leaf under it
 * becomes the active leaf. Answers the conversation with its recent messages, newest first.
 */
export async function selectMessage(services: Services, userId: string, id: string, messageId: string): Promise<{ conversation: ConversationRow; messages: MessageRow[] }> {
  const conversation = await requireOwnConversation(services, userId, id);
  const tree = new Tree(await treeNodes(services.db.knex, conversation.id));
  const chosen = isUuid(messageId) ? tree.byId.get(messageId) : undefined;
  if (!chosen) throw notFound("Message");
  const updated = (await setActiveLeaf(services.db.knex, conversation.id, tree.newestLeafUnder(chosen))) ?? conversation;
  return { conversation: updated, messages: await shownMessages(services, userId, await recentMessages(services.db.knex, conversation.id, EMBEDDED_MESSAGES)) };
}
