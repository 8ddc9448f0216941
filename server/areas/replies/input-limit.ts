import type { Config } from "../../toolkit/config.ts";
import { invalidField, invalidRequest } from "../../toolkit/http/error-catalogue.ts";
import type { ApiError } from "../../toolkit/http/errors.ts";
import { modelRegistry } from "../../toolkit/models/index.ts";
import { countTokens } from "../../toolkit/providers/llm/tokens.ts";
import { INSTRUCTIONS_SHARE, TURN_OVERHEAD } from "./budget.ts";

/**
 * What a message's limit is measured against: a context window and the reply's room in it, and the
 * budget the context may fill when it is not their difference (a model whose counts are estimates,
 * server/toolkit/models/entries.ts). The whole chat settings stand for the registry's largest
 * budget: the longest message the server takes before it knows the persona; a persona's model has
 * its own, checked when its reply begins (the reply engine). `model` names it in the refusal.
 */
export type LimitBasis = Pick<Config["llm"], "contextTokens" | "maxOutputTokens"> & { budget?: number; model?: string };

function basisOf(llm: LimitBasis): LimitBasis {
  // The whole chat settings (a plain basis has no timeout): the registry's largest budget.
  return "timeoutMs" in llm ? modelRegistry(llm as Config["llm"]).largestBudget() : llm;
}

/**
 * The most tokens a new message may have: the context budget (a model's window less its output,
 * as context assembly uses it) less the instructions' share of it, and the overhead of the two
 * turns. A message within a model's limit always fits beside the instructions, whatever the
 * persona; the server's limit (the registry's largest budget; `CHAT_CONTEXT_TOKENS` less
 * `CHAT_MAX_OUTPUT_TOKENS` without a models file) is the same for every persona, so a client can
 * know it before sending
 * (docs/adr/0288-a-message-that-cannot-fit-the-context-is-refused-before-anything-is-reserved.md,
 * docs/adr/0362).
 */
export function maxInputTokens(settings: LimitBasis): number {
  const llm = basisOf(settings);
  const budget = llm.budget ?? llm.contextTokens - llm.maxOutputTokens;
  return Math.max(0, budget - Math.floor(budget * INSTRUCTIONS_SHARE) - 2 * TURN_OVERHEAD);
}

const grouped = (value: number) => value.toLocaleString("en-US");

/** The input's token count when it is over the limit, else undefined; a text of no more bytes than the limit is not counted. */
function overLimit(text: string, limit: number): number | undefined {
  // A token is at least one UTF-8 byte.
  if (text.length <= limit && Buffer.byteLength(text) <= limit) return undefined;
  const tokens = countTokens(text);
  return tokens > limit ? tokens : undefined;
}

/** Why a message over the limit is refused: its size and the limit in tokens, and where the limit comes from. */
export function inputLimitMessage(tokens: number, settings: LimitBasis, subject = "The message"): string {
  const llm = basisOf(settings);
  return (
    `${subject} is ${grouped(tokens)} tokens, over the limit of ${grouped(maxInputTokens(llm))} tokens a message may have ${llm.model ? `with the model \`${llm.model}\`` : "on this server"} ` +
    `(a context of ${grouped(llm.contextTokens)} tokens, less ${grouped(llm.maxOutputTokens)} for the reply and half of the rest for the persona's instructions)`
  );
}

/**
 * The refusal of an input that cannot fit the context beside the instructions: 400 `invalid_request`
 * naming `path` (the request field that holds it) when there is one; undefined when it fits.
 */
export function inputTooLong(llm: LimitBasis, text: string, path?: string, subject?: string): ApiError | undefined {
  const tokens = overLimit(text, maxInputTokens(llm));
  if (tokens === undefined) return undefined;
  const message = inputLimitMessage(tokens, llm, subject);
  return path ? invalidField(path, `is ${grouped(tokens)} tokens, over the limit of ${grouped(maxInputTokens(llm))} tokens a message may have`, message) : invalidRequest(message);
}

/** Throws `inputTooLong`'s refusal. Callers check before they reserve or store anything. */
export function requireInputFits(llm: LimitBasis, text: string, path?: string, subject?: string): void {
  const refusal = inputTooLong(llm, text, path, subject);
  if (refusal) throw refusal;
}
