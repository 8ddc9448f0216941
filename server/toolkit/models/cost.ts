import type { ModelEntry } from "./entries.ts";

/**
 * What a reply cost, in billionths of a US dollar (nano-USD), from the model's prices per million
 * tokens: whole numbers that sum exactly in a bigint column, at a precision far below any price
 * (a token of the cheapest model is tens of nano-USD) (docs/adr/0365).
 */
export function costNanos(entry: Pick<ModelEntry, "inputPricePerMillion" | "outputPricePerMillion">, usage: { inputTokens: number; outputTokens: number }): number {
  // USD per million tokens is nano-USD per thousandth of a token: price × 1000 nano-USD per token.
  return Math.round(usage.inputTokens * entry.inputPricePerMillion * 1000 + usage.outputTokens * entry.outputPricePerMillion * 1000);
}

/** Nano-USD as US dollars for an answer (a bigint column comes from pg as text). */
export function usdOf(nanos: number | string | null | undefined): number {
  return Number(nanos ?? 0) / 1e9;
}
