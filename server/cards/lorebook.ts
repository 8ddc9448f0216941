import { countTokens, truncateToTokens } from "../providers/llm/tokens.ts";
import type { CharacterBook } from "./mapping.ts";

type Entry = CharacterBook["entries"][number];

/** Messages scanned for keys when the book does not say (the new message and three before it). */
export const DEFAULT_SCAN_DEPTH = 4;
/** Tokens the entries may take when the book does not say. */
export const DEFAULT_TOKEN_BUDGET = 1024;
/** However much a book asks, its entries take at most this share of the context. */
export const LORE_SHARE = 0.25;
/** Sample messages take at most this share of the context. */
export const EXAMPLES_SHARE = 0.1;
const MAX_SCAN_DEPTH = 100;

/** What a persona imported from a card adds to its replies' context. */
export interface CardContext {
  lorebook: CharacterBook | null;
  /** The card's `mes_example`, `{{char}}` already replaced. */
  examples: string;
}

function keyMatches(key: string, text: string, lowered: string, caseSensitive: boolean): boolean {
  const needle = key.trim();
  if (!needle) return false;
  return caseSensitive ? text.includes(needle) : lowered.includes(needle.toLowerCase());
}

/**
 * The entries the recent messages (newest first) bring in: `constant` ones always, others when a
 * key is in the last `scan_depth` messages (case-insensitive unless `case_sensitive`), and with
 * `selective` a secondary key as well; never a disabled one. Keys are plain text, `use_regex` or not.
 */
export function matchEntries(book: CharacterBook, recent: readonly string[]): Entry[] {
  const depth = Math.min(MAX_SCAN_DEPTH, Math.max(0, Math.floor(book.scan_depth ?? DEFAULT_SCAN_DEPTH)));
  const text = recent.slice(0, depth).join("\n");
  const lowered = text.toLowerCase();
  return book.entries.filter((entry) => {
    if (entry.enabled === false || !entry.content.trim()) return false;
    if (entry.constant) return true;
    const caseSensitive = entry.case_sensitive === true;
    const any = (keys: readonly string[] | undefined) => (keys ?? []).some((key) => keyMatches(key, text, lowered, caseSensitive));
    if (!any(entry.keys)) return false;
    const secondary = entry.secondary_keys ?? [];
    return !entry.selective || secondary.length === 0 || any(secondary);
  });
}

/**
 * The matched entries that fit `budget` tokens, in insertion order (lower first). When they do not
 * all fit, those of higher `priority` are kept first (constant ones before the rest at equal
 * priority, then lower insertion order): the V2 rule that lower priorities are dropped first.
 */
export function fitEntries(entries: readonly Entry[], budget: number): Entry[] {
  const ranked = [...entries].sort(
    (a, b) => (b.priority ?? 0) - (a.priority ?? 0) || Number(b.constant === true) - Number(a.constant === true) || a.insertion_order - b.insertion_order,
  );
  const kept: Entry[] = [];
  let left = budget;
  for (const entry of ranked) {
    const cost = countTokens(entry.content) + 1;
    if (cost > left) continue;
    left -= cost;
    kept.push(entry);
  }
  return kept.sort((a, b) => a.insertion_order - b.insertion_order);
}

/**
 * The character's text as the model reads it: matched lorebook entries placed before or after the
 * instructions by their `position` (after by default), then the sample messages.
 * `recent` is the new message then the earlier ones, newest first; `contextBudget` the whole
 * context's tokens, of which the book and the examples take at most a share each.
 */
export function withCardContext(instructions: string, card: CardContext | undefined, recent: readonly string[], contextBudget: number): string {
  if (!card) return instructions;
  const before: string[] = [];
  const after: string[] = [];
  if (card.lorebook && card.lorebook.entries.length > 0) {
    const budget = Math.min(Math.max(0, card.lorebook.token_budget ?? DEFAULT_TOKEN_BUDGET), Math.floor(contextBudget * LORE_SHARE));
    for (const entry of fitEntries(matchEntries(card.lorebook, recent), budget)) {
      (entry.position === "before_char" ? before : after).push(entry.content.trim());
    }
  }
  const examples = card.examples.trim() ? truncateToTokens(card.examples.trim(), Math.floor(contextBudget * EXAMPLES_SHARE)) : "";
  if (examples) after.push(`## Example dialogue\n${examples}`);
  return [...before, instructions, ...after].join("\n\n");
}
