import type { Task } from "graphile-worker";
import type { Services } from "../../../toolkit/services.ts";
import { replyConnectionFor } from "../../models/index.ts";
import { firstMessages, setTitleIfUnset, titleSource } from "../store.ts";

const TITLE_MAX = 200;

/** Asks for a title once per conversation; a second request while one is queued is merged into it. */
export async function enqueueTitle(services: Services, conversationId: string): Promise<void> {
  await services.jobs.add("conversation_title", { conversationId }, { jobKey: `conversation_title:${conversationId}`, maxAttempts: 5 });
}

/** A title from the model, tidied: one line, no surrounding quotes, within the contract's 200 characters. */
export function tidyTitle(raw: string): string {
  const line = raw.split("\n").map((part) => part.trim()).find(Boolean) ?? "";
  const unquoted = line.replace(/^(title:\s*)/i, "").replace(/^["'“”‘’*]+|(?<!["'“”‘’*.])["'“”‘’*.]+$/g, "").trim();
  return [...unquoted].slice(0, TITLE_MAX).join("");
}

/** Generates the title of a conversation from its first exchange, unless it got one meanwhile. */
export function titleTask(services: Services): Task {
  return async (payload) => {
    const { conversationId } = payload as { conversationId: string };
    const source = await titleSource(services.db.knex, conversationId);
    if (!source || source.title !== null) return;
    const exchange = await firstMessages(services.db.knex, conversationId);
    if (exchange.length === 0) return;
    // The conversation's replies run on the user's own connection: so does its title.
    const connection = await replyConnectionFor(services, source.user_id, source.provider_connection_id);
    const completion = await services.providers.llm.complete({
      model: source.model,
      purpose: "title",
      ...(connection ? { connection } : {}),
      maxOutputTokens: 24,
      messages: [
        { role: "system", content: "Write a short title (at most six words) for the conversation below. Answer with the title only, without quotes." },
        ...exchange.map((message) => ({ role: message.role, content: message.content })),
      ],
    });
    const title = tidyTitle(completion.content);
    if (title) await setTitleIfUnset(services.db.knex, conversationId, title);
  };
}
