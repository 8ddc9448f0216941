import { withCardContext, type CardContext } from "../cards/index.ts";
import type { RetrievedChunk } from "../knowledge/index.ts";
import { countTokens, truncateToTokens } from "../../toolkit/providers/llm/tokens.ts";
import type { ChatTurn } from "../../toolkit/providers/llm/types.ts";
import { INSTRUCTIONS_SHARE, TURN_OVERHEAD } from "./budget.ts";
import type { PastTurn } from "./types.ts";

// Knowledge may take at most this share of what is left after instructions and the new message,
// so that a long document never crowds out the conversation itself.
const KNOWLEDGE_SHARE = 0.4;
// A long chat's rolling summary takes at most this share (its job writes it to fit; older ones are cut).
const SUMMARY_SHARE = 0.15;

export const SUMMARY_PREAMBLE = "Summary of the earlier part of this conversation:";

export const KNOWLEDGE_PREAMBLE =
  "Relevant excerpts from your knowledge base follow. Use them when they help answer, and say which source you used. " +
  "If they do not cover the question, answer from your own knowledge.";

export interface ContextInput {
  instructions: string;
  /** The caller's own system text, after the instructions (cut from the end with them when too long). */
  system?: readonly string[];
  /** Earlier messages, newest first (as read from the store). */
  history: readonly PastTurn[];
  /** The new user message; empty when the client's turns after it are all there is (`trailing`). */
  userMessage: string;
  /** A client's turns after the user message, at the very end (see `ReplyContext.trailing`). */
  trailing?: readonly ChatTurn[];
  knowledge: RetrievedChunk[];
  /** The rolling summary of the messages before `history`, if any. */
  summary?: string;
  /** Tokens the whole context may use: the model's window minus room for the reply. */
  budget: number;
  /** The lorebook and sample messages of a persona imported from a character card. */
  card?: CardContext;
  /** Fills the card's macros in the lorebook entries and sample messages that are used (the caller fills the rest). */
  fill?: (text: string) => string;
}

export interface AssembledContext {
  turns: ChatTurn[];
  /** The knowledge chunks that fit and were put into the context (what the reply cites). */
  used: RetrievedChunk[];
  tokens: number;
}

const turnTokens = (content: string) => countTokens(content) + TURN_OVERHEAD;

/** The text of a turn's tool calls, counted against the budget with its content. */
function toolText(turn: { toolCalls?: readonly { name: string; arguments: string }[] | undefined }): string {
  return turn.toolCalls?.map((call) => `${call.name}${call.arguments}`).join("") ?? "";
}

/** How a chunk appears in the context: its source line, then its text. */
export function formatKnowledge(chunk: RetrievedChunk): string {
  return `[source: ${chunk.filename}#${chunk.chunk_index}]\n${chunk.content}`;
}

/**
 * The model's context: the persona's active instructions, the summary of a long chat's earlier part,
 * then knowledge excerpts for this message, as many recent messages as fit the budget (oldest
 * first; a greeting is the oldest of them, in its place), and the new user message. Messages
 * that do not fit are left out from the oldest on.
 * Within the budget as long as the new message is within `maxInputTokens` (input-limit.ts): the
 * instructions take at most half, and what follows them only what is left.
 */
export function assembleContext(input: ContextInput): AssembledContext {
  let remaining = input.budget;
  const recent = [input.userMessage, ...input.history.map((turn) => turn.content)];
  const ownInstructions = truncateToTokens(input.instructions, Math.floor(input.budget * INSTRUCTIONS_SHARE));
  // The card's lorebook and samples take their shares only of what the instructions and the message leave.
  const cardRoom = input.budget - turnTokens(ownInstructions) - turnTokens(input.userMessage);
  const instructions = withCardContext(ownInstructions, input.card, recent, input.budget, { room: cardRoom, ...(input.fill ? { fill: input.fill } : {}) });
  const trailing = input.trailing ?? [];
  // A prefill or a closing instruction without a user message before it: no empty user turn.
  const userTurns: ChatTurn[] = input.userMessage === "" && trailing.length > 0 ? [] : [{ role: "user", content: input.userMessage }];
  remaining -= turnTokens(instructions) + turnTokens(input.userMessage) + trailing.reduce((sum, turn) => sum + turnTokens(turn.content + toolText(turn)), 0);
  // The caller's system text shares the instructions' share of the budget, after them.
  const systemTurns: ChatTurn[] = [];
  let systemBudget = Math.min(Math.floor(input.budget * INSTRUCTIONS_SHARE) - countTokens(instructions), remaining);
  for (const text of input.system ?? []) {
    const content = truncateToTokens(text, systemBudget - TURN_OVERHEAD);
    if (!content) continue;
    systemBudget -= turnTokens(content);
    systemTurns.push({ role: "system", content });
    remaining -= turnTokens(content);
  }
  const summaryRoom = Math.min(Math.floor(input.budget * SUMMARY_SHARE), remaining - turnTokens(SUMMARY_PREAMBLE) - 1);
  const summaryText = input.summary ? truncateToTokens(input.summary, summaryRoom) : "";
  const summaryTurn: ChatTurn | undefined = summaryText ? { role: "system", content: `${SUMMARY_PREAMBLE}\n${summaryText}` } : undefined;
  if (summaryTurn) remaining -= turnTokens(summaryTurn.content);

  const used: RetrievedChunk[] = [];
  let knowledgeTurn: ChatTurn | undefined;
  if (input.knowledge.length > 0) {
    let knowledgeBudget = Math.floor(Math.max(0, remaining) * KNOWLEDGE_SHARE) - turnTokens(KNOWLEDGE_PREAMBLE);
    const parts: string[] = [];
    for (const chunk of input.knowledge) {
      const cost = countTokens(formatKnowledge(chunk)) + 2;
      if (cost > knowledgeBudget) continue;
      knowledgeBudget -= cost;
      parts.push(formatKnowledge(chunk));
      used.push(chunk);
    }
    if (used.length > 0) {
      knowledgeTurn = { role: "system", content: `${KNOWLEDGE_PREAMBLE}\n\n${parts.join("\n\n")}` };
      remaining -= turnTokens(knowledgeTurn.content);
    }
  }

  const history: ChatTurn[] = [];
  for (const message of input.history) {
    const cost = (message.tokens || countTokens(message.content + toolText(message))) + TURN_OVERHEAD;
    if (cost > remaining) break;
    remaining -= cost;
    history.push({
      role: message.role,
      content: message.content,
      ...(message.toolCalls ? { toolCalls: message.toolCalls } : {}),
      ...(message.toolCallId ? { toolCallId: message.toolCallId } : {}),
    });
  }
  history.reverse();

  const turns: ChatTurn[] = [
    { role: "system", content: instructions },
    ...systemTurns,
    ...(summaryTurn ? [summaryTurn] : []),
    ...(knowledgeTurn ? [knowledgeTurn] : []),
    ...history,
    ...userTurns,
    ...trailing,
  ];
  return { turns, used, tokens: input.budget - remaining };
}
