import { countTokens, truncateToTokens } from "../../toolkit/providers/llm/tokens.ts";
import { bookMatcher } from "./book-matcher.ts";
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
  /** The card's `mes_example`, as stored (its macros are filled by `withCardContext`'s `fill`). */
  examples: string;
}

/** How the card's texts fit into one reply's context. */
export interface CardFit {
  /** Tokens the entries and the samples may take together, besides their own shares: what the context has left. */
  room?: number;
  /** Fills the card macros (`{{char}}`, `{{user}}`...) of each entry and of the samples before they are fitted. */
  fill?: (text: string) => string;
}

// The separators and the samples' heading, which the shares do not count.
const SAMPLES_HEADING = "## Example dialogue\n";
const SEPARATOR_TOKENS = 2;

/**
 * The recent messages' characters that are scanned: the newest, whole messages from the new one
 * back and the end of the one that crosses the limit. Matching is linear in this, and the
 * history can be long (a hundred messages of 32,000 characters; OpenAI clients send any history
 * they keep), so it is bounded (issue 31 H2): 65,536 is two of the longest messages a chat
 * takes, and many times the default four messages of an ordinary chat, whose results it never changes.
 */
export const MAX_SCANNED_CHARS = 65_536;

/** `messages` joined by newlines as the keys see them, newest first, cut to the newest `limit` UTF-16 units. */
export function scannedText(messages: readonly string[], limit = MAX_SCANNED_CHARS): string {
  const parts: string[] = [];
  let left = limit;
  for (const message of messages) {
    const room = left - (parts.length > 0 ? 1 : 0);
    if (room <= 0) break;
    if (message.length <= room) {
      parts.push(message);
      left = room - message.length;
      continue;
    }
    let start = message.length - room;
    // Not half a surrogate pair: a character is kept whole or not at all.
    if (isLowSurrogate(message.charCodeAt(start)) && isHighSurrogate(message.charCodeAt(start - 1))) start++;
    parts.push(message.slice(start));
    break;
  }
  return parts.join("\n");
}

const isHighSurrogate = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;
const isLowSurrogate = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff;

/**
 * The entries the recent messages (newest first) bring in: `constant` ones always, others when a
 * key is in the last `scan_depth` messages (at most their newest MAX_SCANNED_CHARS characters),
 * case-insensitive unless `case_sensitive`, and with `selective` a secondary key as well; never a
 * disabled one. A key is trimmed and then found as plain text (`includes`), `use_regex` or not; a
 * blank key never matches. All keys are looked for in one pass over the text (bookMatcher).
 */
export function matchEntries(book: CharacterBook, recent: readonly string[]): Entry[] {
  const depth = Math.min(MAX_SCAN_DEPTH, Math.max(0, Math.floor(book.scan_depth ?? DEFAULT_SCAN_DEPTH)));
  const found = bookMatcher(book).found(scannedText(recent.slice(0, depth)));
  return book.entries.filter((entry, index) => {
    if (entry.enabled === false || !entry.content.trim()) return false;
    if (entry.constant) return true;
    if (!found.primary(index)) return false;
    return !entry.selective || (entry.secondary_keys ?? []).length === 0 || found.secondary(index);
  });
}

/**
 * Characters of entries whose tokens one reply counts. A book's entries may fill the 2 MB card,
 * all of them matched (constant) and each too long for the token counter to remember: counting
 * them on every reply blocked the process for over a second (issue 31 H2). A real book's matched
 * entries fill the budget long before this.
 */
export const MAX_COUNTED_CHARS = 262_144;
/** The longest token of the encoding, in UTF-8 bytes: a text longer than 128 x n units has more than n tokens. */
const MAX_TOKEN_BYTES = 128;

/**
 * The matched entries that fit `budget` tokens, in insertion order (lower first). When they do not
 * all fit, those of higher `priority` are kept first (constant ones before the rest at equal
 * priority, then lower insertion order): the V2 rule that lower priorities are dropped first.
 * Entries are counted until MAX_COUNTED_CHARS of them are; those after it are left out.
 */
export function fitEntries(entries: readonly Entry[], budget: number): Entry[] {
  const ranked = [...entries].sort(
    (a, b) => (b.priority ?? 0) - (a.priority ?? 0) || Number(b.constant === true) - Number(a.constant === true) || a.insertion_order - b.insertion_order,
  );
  const kept: Entry[] = [];
  let left = budget;
  let counted = 0;
  for (const entry of ranked) {
    // An entry costs at least a token: nothing more fits.
    if (left < 1) break;
    // A UTF-16 unit is at least a byte: this entry cannot fit, and need not be counted to know it.
    if (entry.content.length > MAX_TOKEN_BYTES * left) continue;
    counted += entry.content.length;
    if (counted > MAX_COUNTED_CHARS) break;
    const cost = countTokens(entry.content) + 1;
    if (cost > left) continue;
    left -= cost;
    kept.push(entry);
  }
  return kept.sort((a, b) => a.insertion_order - b.insertion_order);
}

/**
 * Characters of the sample messages that are fitted to their share of the context. Fitting
 * encodes the whole text, on every reply, and a card's `mes_example` may be 2 MB (issue 31 H2);
 * a real card's are a few thousand characters.
 */
export const MAX_EXAMPLE_CHARS = 65_536;

/** The first `limit` UTF-16 units of `text`, without half a surrogate pair at the end. */
function leadingChars(text: string, limit: number): string {
  if (text.length <= limit) return text;
  return text.slice(0, isHighSurrogate(text.charCodeAt(limit - 1)) ? limit - 1 : limit);
}

/**
 * The character's text as the model reads it: matched lorebook entries placed before or after the
 * instructions by their `position` (after by default), then the sample messages.
 * `recent` is the new message then the earlier ones, newest first; `contextBudget` the whole
 * context's tokens, of which the book and the examples take at most a share each, and together no
 * more than `fit.room`. Macros are filled (`fit.fill`) before the texts are counted.
 */
export function withCardContext(instructions: string, card: CardContext | undefined, recent: readonly string[], contextBudget: number, fit: CardFit = {}): string {
  if (!card) return instructions;
  const fill = fit.fill ?? ((text: string) => text);
  let room = fit.room ?? Number.POSITIVE_INFINITY;
  const before: string[] = [];
  const after: string[] = [];
  if (card.lorebook && card.lorebook.entries.length > 0) {
    const budget = Math.min(Math.max(0, card.lorebook.token_budget ?? DEFAULT_TOKEN_BUDGET), Math.floor(contextBudget * LORE_SHARE), room);
    const matched = matchEntries(card.lorebook, recent).map((entry) => (fit.fill ? { ...entry, content: fill(entry.content) } : entry));
    for (const entry of fitEntries(matched, budget)) {
      (entry.position === "before_char" ? before : after).push(entry.content.trim());
      room -= countTokens(entry.content) + SEPARATOR_TOKENS;
    }
  }
  const examplesBudget = Math.min(Math.floor(contextBudget * EXAMPLES_SHARE), room - countTokens(SAMPLES_HEADING) - SEPARATOR_TOKENS);
  const examples = card.examples.trim() && examplesBudget > 0 ? truncateToTokens(fill(leadingChars(card.examples.trim(), MAX_EXAMPLE_CHARS)), examplesBudget) : "";
  if (examples) after.push(`${SAMPLES_HEADING}${examples}`);
  return [...before, instructions, ...after].join("\n\n");
}
