import type { Command } from "commander";
import type { PersonaClient, Schemas } from "../../sdk/src/index.ts";
import { greetingOf, runChatSession, storedGreeting, type ChatTarget } from "../chat-session.ts";
import { contextOf } from "../context.ts";
import { examples } from "../help.ts";
import { nonNegativeInt } from "../parse.ts";
import { isUuid, resolvePersonaId } from "../resolve.ts";

const status = (error: unknown) => (error as { status?: unknown }).status;

/**
 * What `chat <ref>` talks to: an existing conversation (by id), or a new conversation with a
 * persona (by id or name). Ids of both kinds are UUIDs, so a UUID is tried as a conversation first.
 * A conversation nothing was said in yet opens with its stored greeting, shown once; one with an
 * exchange shows its recent messages (the greeting among them while it is recent).
 */
async function resolveTarget(client: PersonaClient, ref: string, title: string | undefined): Promise<ChatTarget & { history: Schemas["Message"][] }> {
  if (isUuid(ref)) {
    try {
      const conversation = await client.conversations.get(ref);
      const persona = await client.personas.get(conversation.persona_id).catch(() => undefined);
      const isNew = conversation.message_count === 0;
      return {
        conversationId: conversation.id,
        personaId: conversation.persona_id,
        persona,
        isNew,
        greeting: isNew ? greetingOf(conversation.messages) : undefined,
        history: isNew ? [] : conversation.messages,
      };
    } catch (error) {
      if (status(error) !== 404) throw error;
    }
  }
  const personaId = await resolvePersonaId(client, ref);
  const persona = await client.personas.get(personaId);
  const conversation = await client.conversations.create({ persona_id: personaId, ...(title ? { title } : {}) });
  return { conversationId: conversation.id, personaId, persona, isNew: true, greeting: await storedGreeting(client, conversation.id), history: [] };
}

export function registerChatCommand(program: Command): void {
  program
    .command("chat")
    .description("Chat with a persona in the terminal, replies streamed as they are written")
    .argument("<persona-or-conversation>", "persona id or name (starts a new conversation), or a conversation id (continues it)")
    .option("--title <title>", "title of a new conversation (default: generated from the first exchange)")
    .option("--history <n>", "earlier messages to show when continuing a conversation", nonNegativeInt, 10)
    .addHelpText(
      "after",
      "\nIn the chat: type a message and press Enter; Ctrl-C stops the reply being written (twice at the\n" +
        "prompt quits); /new starts a new conversation with the same persona; /exit (or Ctrl-D) quits.\n" +
        "Lines piped on stdin are sent one by one. With --json, every event is one JSON line (NDJSON).\n" +
        examples(["persona chat Orion", "persona chat 0193a9ef-1a2b-7c3d-8e4f-5a6b7c8d9e01", "echo 'Hello!' | persona chat Orion --json"]),
    )
    .action(async (ref: string, options: { title?: string; history: number }, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const target = await resolveTarget(client, ref, options.title);
      await runChatSession({ client, baseUrl: ctx.baseUrl, out: ctx.out, target, history: options.history > 0 ? target.history.slice(-options.history) : [] });
    });
}
