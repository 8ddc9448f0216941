import { createHash } from "node:crypto";
import { KeywordSet } from "./keywords.ts";
import { LIMITS, type CharacterBook } from "./mapping.ts";

// A lorebook's keys compiled for matching (issue 31 H2): one automaton for the case-sensitive keys,
// read over the text as it is, one for the others, lowercased, read over the lowercased text; each
// key is looked for once however many entries list it. Compiled once per book and kept, so that a
// reply only reads the text.

type Entry = CharacterBook["entries"][number];

/** Which entries' keys a text holds, by the entry's index in the book. */
export interface FoundKeys {
  /** One of the entry's `keys` is in the text. */
  primary(index: number): boolean;
  /** One of its `secondary_keys` is. */
  secondary(index: number): boolean;
}

/** A key of an entry: its id in the exact or the folded (lowercased) keyword set, as `id * 2 + folded`. */
type KeyRef = number;

class BookMatcher {
  readonly states: number;
  readonly #exact: KeywordSet;
  readonly #folded: KeywordSet;
  readonly #primary: KeyRef[][];
  readonly #secondary: KeyRef[][];

  constructor(entries: readonly Entry[]) {
    const exact = new Map<string, number>();
    const folded = new Map<string, number>();
    // Limits again, for a book stored before import refused over them: a valid key is at most 100
    // characters, so 200 UTF-16 units, and so on; keys beyond are left out, and never match.
    let keys = 0;
    let units = 0;
    const refs = (list: readonly string[] | undefined, caseSensitive: boolean): KeyRef[] => {
      const out: KeyRef[] = [];
      for (const key of list ?? []) {
        const trimmed = key.trim();
        if (!trimmed || trimmed.length > 2 * LIMITS.keyLength || keys >= LIMITS.keys || units + trimmed.length > 2 * LIMITS.keyCharacters) continue;
        keys++;
        units += trimmed.length;
        const needle = caseSensitive ? trimmed : trimmed.toLowerCase();
        const ids = caseSensitive ? exact : folded;
        let id = ids.get(needle);
        if (id === undefined) ids.set(needle, (id = ids.size));
        out.push(id * 2 + (caseSensitive ? 0 : 1));
      }
      return out;
    };
    this.#primary = entries.map((entry) => refs(entry.keys, entry.case_sensitive === true));
    this.#secondary = entries.map((entry) => refs(entry.secondary_keys, entry.case_sensitive === true));
    this.#exact = new KeywordSet([...exact.keys()]);
    this.#folded = new KeywordSet([...folded.keys()]);
    this.states = this.#exact.states + this.#folded.states;
  }

  /** The keys `text` holds: the case-sensitive ones in it as it is, the others in it lowercased. */
  found(text: string): FoundKeys {
    const exact = this.#exact.keywords.length > 0 ? this.#exact.found(text) : new Uint8Array(0);
    const folded = this.#folded.keywords.length > 0 ? this.#folded.found(text.toLowerCase()) : new Uint8Array(0);
    const any = (refs: KeyRef[] | undefined) => (refs ?? []).some((ref) => ((ref & 1) === 1 ? folded : exact)[ref >> 1] === 1);
    return { primary: (index) => any(this.#primary[index]), secondary: (index) => any(this.#secondary[index]) };
  }
}

// Compiled books, most recently used last. The key is a digest of exactly what a matcher is built
// from (each entry's case flag and keys, in order), never a persona id: a book that changes, or two
// personas' books, cannot share a matcher unless their keys are the same. Bounded in books and in
// states (22 bytes each): a book at the limits has at most about 200,000.
const MAX_CACHED_BOOKS = 100;
const MAX_CACHED_STATES = 1_000_000;
const cache = new Map<string, BookMatcher>();
let cachedStates = 0;

/** The book's matcher, compiled on its first use and then taken from the cache. */
export function bookMatcher(book: CharacterBook): BookMatcher {
  const material = JSON.stringify(book.entries.map((entry) => [entry.case_sensitive === true, entry.keys ?? [], entry.secondary_keys ?? []]));
  const key = createHash("sha256").update(material).digest("base64");
  const cached = cache.get(key);
  if (cached) {
    cache.delete(key);
    cache.set(key, cached);
    return cached;
  }
  const matcher = new BookMatcher(book.entries);
  cache.set(key, matcher);
  cachedStates += matcher.states;
  for (const [oldKey, old] of cache) {
    if (cache.size <= MAX_CACHED_BOOKS && cachedStates <= MAX_CACHED_STATES) break;
    if (old === matcher) break;
    cache.delete(oldKey);
    cachedStates -= old.states;
  }
  return matcher;
}

/** Books and states in the cache, for tests. */
export function cachedBooks(): { books: number; states: number } {
  return { books: cache.size, states: cachedStates };
}
