import type { ChatStream, PersonaClient, Schemas } from "../sdk/src/index.ts";

interface TreeCommandContext {
  client: PersonaClient;
  conversationId: () => string;
  /** Streams a reply to the screen, as a sent message's. */
  play: (stream: ChatStream) => Promise<void>;
  show: (text: string) => void;
}

export const TREE_HELP = "/regen answers again, /edit <text> rewrites your last message, /branch lists branches, /branch <n> switches.";

/**
 * The chat's conversation-tree commands: `/regen` (a new alternative of the last reply), `/edit
 * <text>` (a new branch from your last message), `/branch` (the branches) and `/branch <n>`
 * (switch to one). Answers false for a line that is none of them.
 */
export function treeCommands(context: TreeCommandContext): (line: string) => Promise<boolean> {
  const { client, play, show } = context;
  /** The active branch's messages, newest last (the last 50 are enough for the commands). */
  const activePath = async () => (await client.conversations.get(context.conversationId())).messages;
  let listed: Schemas["ConversationBranch"][] = [];

  return async (line) => {
    const [command, ...rest] = line.split(/\s+/);
    const argument = line.slice(command!.length).trim();
    if (command === "/regen" && rest.length === 0) {
      const last = (await activePath()).at(-1);
      // A greeting is no reply: its alternatives are branches (/branch).
      if (last?.role !== "assistant" || last.greeting) show("(there is no reply to regenerate yet)\n");
      else {
        await play(client.conversations.regenerateStream(context.conversationId(), last.id));
        const now = (await activePath()).at(-1);
        if (now?.role === "assistant" && (now.alternative_count ?? 1) > 1) show(`(alternative ${(now.alternative_index ?? 0) + 1} of ${now.alternative_count})\n\n`);
      }
      return true;
    }
    if (command === "/edit") {
      const question = (await activePath()).findLast((message) => message.role === "user");
      if (!argument) show("(usage: /edit <the new text of your last message>)\n");
      else if (!question) show("(there is no message of yours to edit yet)\n");
      else await play(client.conversations.editStream(context.conversationId(), question.id, { content: argument }));
      return true;
    }
    if (command === "/branch") {
      if (!argument) {
        const page = await client.conversations.branches(context.conversationId(), { limit: 20 });
        listed = page.data;
        if (listed.length === 0) show("(no messages yet)\n");
        for (const [index, branch] of listed.entries()) {
          const text = branch.last_message.content.replace(/\s+/g, " ");
          show(`${branch.active ? "*" : " "} ${index + 1}. ${branch.message_count} messages, last: ${text.length > 60 ? `${text.slice(0, 59)}…` : text}\n`);
        }
        return true;
      }
      const chosen = listed[Number(argument) - 1];
      if (!/^\d+$/.test(argument) || !chosen) show("(usage: /branch to list, then /branch <number>)\n");
      else {
        await client.conversations.activateBranch(context.conversationId(), chosen.leaf_id);
        show(`(switched to branch ${argument}; its last message: ${chosen.last_message.content.replace(/\s+/g, " ")})\n`);
      }
      return true;
    }
    return false;
  };
}
