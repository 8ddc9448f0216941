import { readFileSync } from "node:fs";
import type { ModerationProvider, ModerationVerdict } from "./types.ts";

/** The list the service ships: deliberately small; operators add their own (MODERATION_WORDLIST). */
const DEFAULT_LIST = new URL("./default-words.txt", import.meta.url);

/** The category of entries before any `[heading]` in a list. */
const UNSORTED = "flagged-term";

interface Entry {
  pattern: RegExp;
  category: string;
}

/**
 * Reads a list: one word or phrase per line, `[category]` headings, `#` comments, blank lines
 * ignored. An entry matches as whole words in any letter case, its spaces matching any run of
 * spaces or punctuation, so `kill yourself` also catches `Kill-yourself`.
 */
export function parseWordList(text: string): Entry[] {
  const entries: Entry[] = [];
  let category = UNSORTED;
  for (const raw of text.split(/\r?\n/)) {
    const comment = raw.indexOf("#");
    const line = (comment === -1 ? raw : raw.slice(0, comment)).trim();
    if (!line) continue;
    const heading = /^\[(.+)\]$/.exec(line);
    if (heading) {
      category = heading[1]!.trim();
      continue;
    }
    const words = line.toLowerCase().split(/\s+/).map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    entries.push({ pattern: new RegExp(`(?<![\\p{L}\\p{N}])${words.join("[\\s\\p{P}]+")}(?![\\p{L}\\p{N}])`, "iu"), category });
  }
  return entries;
}

/** The offline provider: flags text containing a word or phrase of the shipped list or the operator's. */
export class WordListModeration implements ModerationProvider {
  readonly name = "wordlist";
  readonly #entries: Entry[];

  constructor(entries: Entry[]) {
    this.#entries = entries;
  }

  /** The shipped list and, when given, the operator's file (read once, at start: a missing file stops the start). */
  static load(extraPath?: string): WordListModeration {
    const text = readFileSync(DEFAULT_LIST, "utf8") + (extraPath ? `\n[${UNSORTED}]\n${readFileSync(extraPath, "utf8")}` : "");
    return new WordListModeration(parseWordList(text));
  }

  async check(texts: readonly string[]): Promise<ModerationVerdict> {
    const categories = new Set<string>();
    for (const text of texts) for (const entry of this.#entries) if (entry.pattern.test(text)) categories.add(entry.category);
    return { flagged: categories.size > 0, categories: [...categories] };
  }
}
