import type { Task } from "graphile-worker";
import { modelRegistry } from "../../../toolkit/models/index.ts";
import { countTokens } from "../../../toolkit/providers/llm/tokens.ts";
import { replyConnectionFor } from "../../models/index.ts";
import type { Services } from "../../../toolkit/services.ts";
import { insertSummary, pathMessages, summariesOn, summarySource } from "../tree/store.ts";

/**
 * Long-chat memory. The context budget (the model's window minus the reply's room) is split:
 * instructions at most 50 %, the rolling summary at most 15 %, knowledge at most 40 % of what is
 * left, recent history the rest. Once the unsummarised history passes half the budget (or the
 * history window), a job summarises the oldest messages of the active path until the recent ones
 * take at most 35 %, so the summary's prefix and the messages after it follow each other.
 */
export const SUMMARY_SHARE = 0.15;
const SUMMARISE_AT_SHARE = 0.5;
const KEEP_SHARE = 0.35;
/** Same as the conversations' history window: messages older than the window are summarised too. */
const WINDOW = 200;
const TURN_OVERHEAD = 4;

export const SUMMARY_INSTRUCTIONS =
  "Summarise the conversation below for your own memory. Keep every fact the user stated (names, places, dates, " +
  "numbers, preferences, decisions) as short bullet points; start from the summary so far and add to it. " +
  "Answer with the bullet points only.";

function contextBudget(services: Services): number {
  return services.config.llm.contextTokens - services.config.llm.maxOutputTokens;
}

const cost = (message: { content: string; content_tokens?: number }) => (message.content_tokens || countTokens(message.content)) + TURN_OVERHEAD;

/** Whether a turn's history (newest first, after its summary) no longer fits what the context keeps. */
export function needsSummary(services: Services, history: readonly { content: string; content_tokens?: number }[]): boolean {
  if (history.length >= WINDOW) return true;
  let tokens = 0;
  for (const message of history) tokens += cost(message);
  return tokens > contextBudget(services) * SUMMARISE_AT_SHARE;
}

/** Asks for the summary to be brought forward; a request while one is queued is merged into it. */
export async function enqueueSummary(services: Services, conversationId: string): Promise<void> {
  await services.jobs.add("conversation_summary", { conversationId }, { jobKey: `conversation_summary:${conversationId}`, maxAttempts: 5 });
}

/** One transcript line per message, as the summariser reads it. */
function transcript(messages: readonly { role: string; content: string }[]): string {
  return messages.map((message) => `${message.role === "user" ? "User" : "Assistant"}: ${message.content.replace(/\s+/g, " ").trim()}`).join("\n");
}

/**
 * Brings the active path's rolling summary forward: the messages between the latest summary on the
 * path and the recent ones the context keeps are folded into it, in pieces that fit the model's
 * window, and the result is stored keyed by the last message it covers.
 */
export function summaryTask(services: Services): Task {
  return async (payload) => {
    const { conversationId } = payload as { conversationId: string };
    const { knex } = services.db;
    const source = await summarySource(knex, conversationId);
    if (!source?.active_message_id) return;
    const path = await pathMessages(knex, source.active_message_id);
    // The conversation's replies run on the user's own connection: so does its memory, within its window.
    const connection = await replyConnectionFor(services, source.user_id, source.provider_connection_id);
    const budget = connection ? Math.min(contextBudget(services), modelRegistry(services.config.llm).budget(source.model, connection).budget) : contextBudget(services);
    let kept = 0;
    let tokens = 0;
    for (let i = path.length - 1; i >= 0 && kept < WINDOW - 1; i--) {
      tokens += cost(path[i]!);
      if (tokens > budget * KEEP_SHARE) break;
      kept++;
    }
    const through = path.length - kept - 1;
    if (through < 0) return;
    const [latest] = await summariesOn(knex, conversationId, path.map((message) => message.id));
    // Without a summary yet, from the first message on: the greeting (depth 0) is summarised too.
    const from = latest ? latest.through_depth : -1;
    if (path[through]!.depth <= from) return;

    const summaryTokens = Math.floor(budget * SUMMARY_SHARE);
    // Each call holds the instructions, the summary so far and as many messages as fit the rest.
    const pieceTokens = Math.max(budget - summaryTokens * 2 - countTokens(SUMMARY_INSTRUCTIONS), 256);
    let summary = latest?.content ?? "";
    let i = path.findIndex((message) => message.depth > from);
    while (i <= through) {
      const piece = [];
      let used = 0;
      while (i <= through && (piece.length === 0 || used + cost(path[i]!) <= pieceTokens)) {
        used += cost(path[i]!);
        piece.push(path[i]!);
        i++;
      }
      const completion = await services.providers.llm.complete({
        model: source.model,
        purpose: "summary",
        ...(connection ? { connection } : {}),
        maxOutputTokens: summaryTokens,
        messages: [
          { role: "system", content: SUMMARY_INSTRUCTIONS },
          { role: "user", content: `Summary so far:\n${summary || "(none)"}\n\nMessages:\n${transcript(piece)}` },
        ],
      });
      summary = completion.content.trim();
    }
    const last = path[through]!;
    await insertSummary(knex, {
      conversation_id: conversationId,
      through_message_id: last.id,
      through_depth: last.depth,
      content: summary,
      content_tokens: countTokens(summary),
      created_at: services.now(),
    });
  };
}
