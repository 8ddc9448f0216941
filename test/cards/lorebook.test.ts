import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cachedBooks } from "../../server/areas/cards/book-matcher.ts";
import { DEFAULT_SCAN_DEPTH, fitEntries, LORE_SHARE, matchEntries, scannedText, withCardContext } from "../../server/areas/cards/lorebook.ts";
import type { CharacterBook } from "../../server/areas/cards/mapping.ts";
import { countTokens } from "../../server/toolkit/providers/llm/tokens.ts";
import { assembleContext } from "../../server/areas/replies/context.ts";

// The lorebook matcher: which entries the recent messages bring in, in which order, within which budget.
type Entry = CharacterBook["entries"][number];
const entry = (content: string, fields: Partial<Entry> = {}): Entry => ({ keys: [], content, extensions: {}, enabled: true, insertion_order: 0, ...fields });
const book = (entries: Entry[], fields: Partial<CharacterBook> = {}): CharacterBook => ({ extensions: {}, entries, ...fields });
const matched = (b: CharacterBook, recent: string[]) => matchEntries(b, recent).map((e) => e.content);

describe("matchEntries", () => {
  it("matches a key anywhere in the scanned messages, case-insensitively by default", () => {
    const b = book([entry("A", { keys: ["Andromeda"] }), entry("B", { keys: ["vega"] })]);
    expect(matched(b, ["Tell me about ANDROMEDA"])).toEqual(["A"]);
    expect(matched(b, ["nothing", "Vega was bright"])).toEqual(["B"]);
  });

  it("respects case_sensitive", () => {
    const b = book([entry("A", { keys: ["Nova"], case_sensitive: true })]);
    expect(matched(b, ["a nova exploded"])).toEqual([]);
    expect(matched(b, ["Captain Nova"])).toEqual(["A"]);
  });

  it("matches keys beyond ASCII, folding case", () => {
    const b = book([entry("Æ", { keys: ["ærøskøbing"] }), entry("星", { keys: ["星"] })]);
    expect(matched(b, ["I visited ÆRØSKØBING", "見て、星が"])).toEqual(["Æ", "星"]);
  });

  it("scans only the last scan_depth messages (newest first), by default the last " + DEFAULT_SCAN_DEPTH, () => {
    const b = book([entry("A", { keys: ["comet"] })], { scan_depth: 2 });
    expect(matched(b, ["one", "comet two"])).toEqual(["A"]);
    expect(matched(b, ["one", "two", "comet three"])).toEqual([]);
    expect(matched(book([entry("A", { keys: ["comet"] })]), ["1", "2", "3", "comet 4"])).toEqual(["A"]);
    expect(matched(book([entry("A", { keys: ["comet"] })]), ["1", "2", "3", "4", "comet 5"])).toEqual([]);
    expect(matched(book([entry("A", { keys: ["comet"] })], { scan_depth: 0 }), ["comet"])).toEqual([]);
  });

  it("needs a secondary key as well for a selective entry (none listed: the primary alone)", () => {
    const b = book([entry("S", { keys: ["ship"], selective: true, secondary_keys: ["engine", "hull"] }), entry("T", { keys: ["ship"], selective: true, secondary_keys: [] })]);
    expect(matched(b, ["the ship"])).toEqual(["T"]);
    expect(matched(b, ["the ship's hull"])).toEqual(["S", "T"]);
    expect(matched(b, ["the hull"])).toEqual([]);
    expect(matched(book([entry("U", { keys: ["ship"], secondary_keys: ["engine"] })]), ["the ship"])).toEqual(["U"]);
  });

  it("always inserts a constant entry, never a disabled one, never an empty one, never on a blank key", () => {
    const b = book([
      entry("C", { constant: true }),
      entry("D", { keys: ["star"], enabled: false }),
      entry("E", { keys: ["star"], constant: true, enabled: false }),
      entry("  ", { keys: ["star"] }),
      entry("F", { keys: ["", "  "] }),
    ]);
    expect(matched(b, ["star"])).toEqual(["C"]);
  });

  it("matches regex keys as plain text", () => {
    const b = book([entry("R", { keys: ["a.c"], use_regex: true })]);
    expect(matched(b, ["abc"])).toEqual([]);
    expect(matched(b, ["a.c"])).toEqual(["R"]);
  });
});

// The matcher before issue 31 H2, a substring search per key, as the rule the automaton must keep.
function matchedBefore(b: CharacterBook, recent: readonly string[]): string[] {
  const depth = Math.min(100, Math.max(0, Math.floor(b.scan_depth ?? DEFAULT_SCAN_DEPTH)));
  const text = recent.slice(0, depth).join("\n");
  const lowered = text.toLowerCase();
  const keyMatches = (key: string, caseSensitive: boolean) => {
    const needle = key.trim();
    if (!needle) return false;
    return caseSensitive ? text.includes(needle) : lowered.includes(needle.toLowerCase());
  };
  return b.entries
    .filter((e) => {
      if (e.enabled === false || !e.content.trim()) return false;
      if (e.constant) return true;
      const any = (keys: readonly string[] | undefined) => (keys ?? []).some((key) => keyMatches(key, e.case_sensitive === true));
      if (!any(e.keys)) return false;
      const secondary = e.secondary_keys ?? [];
      return !e.selective || secondary.length === 0 || any(secondary);
    })
    .map((e) => e.content);
}

describe("matchEntries gives the results of the substring search it replaces (issue 31 H2)", () => {
  // Words that overlap and differ in case, with spaces to trim, a blank, and letters whose
  // lowercase differs in length or is outside ASCII.
  const WORDS = ["ship", "Ship", "SHIP", "hip", "ship hull", " hull ", "", "  ", "İstanbul", "i̇stanbul", "ÆRØ", "ærø", "星", "😀", "a.c", "Nova", "nova"];
  const keyList = fc.array(fc.constantFrom(...WORDS), { maxLength: 4 });
  const generatedEntry = fc.record({
    content: fc.constantFrom("Lore", " ", "More lore"),
    keys: keyList,
    secondary_keys: fc.option(keyList, { nil: undefined }),
    case_sensitive: fc.option(fc.boolean(), { nil: undefined }),
    selective: fc.option(fc.boolean(), { nil: undefined }),
    constant: fc.option(fc.boolean(), { nil: undefined }),
    enabled: fc.boolean(),
    use_regex: fc.option(fc.boolean(), { nil: undefined }),
  });
  const generatedBook = fc.record({
    entries: fc.array(generatedEntry, { maxLength: 12 }),
    scan_depth: fc.option(fc.integer({ min: -2, max: 6 }), { nil: undefined }),
  });
  const message = fc.array(fc.oneof(fc.constantFrom(...WORDS), fc.constantFrom(" ", "\n", "x", "I", "STAN")), { maxLength: 8 }).map((parts) => parts.join(""));

  it("on generated books and messages", () => {
    fc.assert(
      fc.property(generatedBook, fc.array(message, { maxLength: 8 }), ({ entries, scan_depth }, recent) => {
        const b = book(
          entries.map((e, index) => ({ ...e, content: `${e.content} ${index}`.replace(/^ +\d+$/, " "), extensions: {}, insertion_order: index })),
          scan_depth === undefined ? {} : { scan_depth },
        );
        expect(matched(b, recent)).toEqual(matchedBefore(b, recent));
      }),
      { numRuns: 2_000 },
    );
  });

  it("compiles a book's keys once: another object with the same keys reuses the matcher", () => {
    const keys = Array.from({ length: 50 }, (_, i) => `cached-key-${i}-${Math.random()}`);
    const first = book(keys.map((key) => entry(key, { keys: [key] })));
    expect(matched(first, [keys[7]!])).toEqual([keys[7]]);
    const after = cachedBooks();
    const again = book(keys.map((key) => entry(key, { keys: [key] })));
    expect(matched(again, [`${keys[8]} and ${keys[9]}`])).toEqual([keys[8], keys[9]]);
    expect(cachedBooks()).toEqual(after);
    // A book whose keys differ gets its own matcher, whatever else it shares.
    expect(matched(book([entry(keys[8]!, { keys: ["other"] })]), [keys[8]!])).toEqual([]);
  });

  it("still matches a book stored before the limits, leaving out the keys past them", () => {
    const huge = book([entry("FIRST", { keys: ["needle"] }), ...Array.from({ length: 200 }, (_, i) => entry(`E${i}`, { keys: Array.from({ length: 100 }, (_, k) => `hay-${i}-${k}`) }))]);
    expect(matched(huge, ["a needle, hay-0-0 and hay-199-99"])).toEqual(["FIRST", "E0"]);
  });
});

describe("the scanned text (issue 31 H2)", () => {
  it("is the recent messages joined, newest first, when they are short", () => {
    expect(scannedText(["new", "older", "oldest"])).toBe("new\nolder\noldest");
    expect(scannedText([])).toBe("");
  });

  it("keeps the newest characters: whole messages from the new one back, then the end of the one that crosses the limit", () => {
    expect(scannedText(["abc", "defgh", "ijk"], 7)).toBe("abc\nfgh");
    expect(scannedText(["abc", "defgh"], 4)).toBe("abc");
    expect(scannedText(["abcdef"], 3)).toBe("def");
    // A character is never cut in half.
    expect(scannedText(["x😀yz"], 3)).toBe("yz");
    expect(scannedText(["x😀yz"], 4)).toBe("😀yz");
    const long = ["q".repeat(40_000), "w".repeat(40_000), "e".repeat(40_000)];
    expect(scannedText(long).length).toBe(65_536);
  });

  it("leaves out a key that is only in older history than the newest 65,536 characters", () => {
    const b = book([entry("NEW", { keys: ["comet"] }), entry("OLD", { keys: ["nebula"] })], { scan_depth: 100 });
    const history = ["What about the comet?", ...Array.from({ length: 4 }, () => "filler ".repeat(4_500)), "The nebula, long ago. " + "z".repeat(10_000)];
    expect(history.join("\n").length).toBeGreaterThan(128_000);
    expect(matched(b, history)).toEqual(["NEW"]);
    expect(matched(b, ["the nebula", ...history.slice(1)])).toEqual(["OLD"]);
  });
});

describe("fitEntries", () => {
  it("orders by insertion_order, lower first", () => {
    const entries = [entry("third", { insertion_order: 30 }), entry("first", { insertion_order: -1 }), entry("second", { insertion_order: 20 })];
    expect(fitEntries(entries, 1000).map((e) => e.content)).toEqual(["first", "second", "third"]);
  });

  it("drops lower priorities first when the budget is short, keeping the order of what stays", () => {
    const long = "word ".repeat(50);
    const entries = [entry(`low ${long}`, { priority: 1, insertion_order: 1 }), entry(`high ${long}`, { priority: 9, insertion_order: 2 }), entry(`mid ${long}`, { priority: 5, insertion_order: 3 })];
    const budget = 2 * (countTokens(`high ${long}`) + 1) + 5;
    expect(fitEntries(entries, budget).map((e) => e.content.split(" ")[0])).toEqual(["high", "mid"]);
    expect(fitEntries(entries, 0)).toEqual([]);
  });

  it("counts the tokens of at most 262,144 characters of entries a reply: a book of long entries costs a bounded time (issue 31 H2)", () => {
    // Each 24,000 characters and about 4,000 tokens: the budget would take all 20, the count takes 10.
    const entries = Array.from({ length: 20 }, (_, i) => entry(`${String(i).padStart(2, "0")}${" lorem ipsum".repeat(2_000)}`.slice(0, 24_000), { insertion_order: i }));
    expect(fitEntries(entries, 10_000_000).map((e) => e.content.slice(0, 2))).toEqual(["00", "01", "02", "03", "04", "05", "06", "07", "08", "09"]);
    // An entry too long to fit is passed over without counting it, so it takes nothing from the count.
    const tooLong = entry("x".repeat(300_000), { priority: 9 });
    expect(fitEntries([tooLong, entry("small", { insertion_order: 1 })], 1_000).map((e) => e.content)).toEqual(["small"]);
  });

  it("skips an entry that does not fit and still takes smaller ones after it", () => {
    const entries = [entry("x ".repeat(500), { insertion_order: 1 }), entry("small", { insertion_order: 2 })];
    expect(fitEntries(entries, 20).map((e) => e.content)).toEqual(["small"]);
  });
});

describe("withCardContext and assembleContext", () => {
  const lore = book(
    [
      entry("BEFORE", { keys: ["nebula"], position: "before_char", insertion_order: 2 }),
      entry("AFTER-2", { keys: ["nebula"], position: "after_char", insertion_order: 2 }),
      entry("AFTER-1", { keys: ["nebula"], insertion_order: 1 }),
      entry("NEVER", { keys: ["quasar"] }),
    ],
    { token_budget: 500 },
  );

  it("puts entries before or after the character's text by position, then the sample messages", () => {
    const text = withCardContext("CHARACTER", { lorebook: lore, examples: "<START>\nNova: Hi." }, ["a nebula?"], 10_000);
    expect(text).toBe("BEFORE\n\nCHARACTER\n\nAFTER-1\n\nAFTER-2\n\n## Example dialogue\n<START>\nNova: Hi.");
    expect(withCardContext("CHARACTER", undefined, ["nebula"], 10_000)).toBe("CHARACTER");
    expect(withCardContext("CHARACTER", { lorebook: lore, examples: "" }, ["nothing"], 10_000)).toBe("CHARACTER");
  });

  it("keeps the book within its token_budget and within a share of the context", () => {
    const big = book([entry("y ".repeat(300), { keys: ["nebula"], insertion_order: 1 }), entry("tiny", { keys: ["nebula"], insertion_order: 2 })], { token_budget: 50 });
    expect(withCardContext("C", { lorebook: big, examples: "" }, ["nebula"], 10_000)).toBe("C\n\ntiny");
    const roomy = book(big.entries, { token_budget: 100_000 });
    const budget = 1_000;
    const text = withCardContext("C", { lorebook: roomy, examples: "" }, ["nebula"], budget);
    expect(countTokens(text)).toBeLessThanOrEqual(budget * LORE_SHARE + 5);
  });

  it("fits at most the first 65,536 characters of the sample messages, however large the context (issue 31 H2)", () => {
    const examples = `<START>\n${"Nova: Look up. ".repeat(70_000)}`;
    const text = withCardContext("C", { lorebook: null, examples }, ["hi"], 10_000_000);
    expect(text.startsWith("C\n\n## Example dialogue\n<START>\nNova: Look up.")).toBe(true);
    expect(text.length).toBe("C\n\n## Example dialogue\n".length + 65_536);
    // Never half a character at the cut.
    const emoji = withCardContext("C", { lorebook: null, examples: `x${"🌌".repeat(40_000)}` }, ["hi"], 10_000_000);
    expect(emoji.endsWith("🌌")).toBe(true);
  });

  it("scans the new message and the history in assembleContext, the entries landing in the system turn", () => {
    const history = [{ role: "assistant" as const, content: "The nebula glows." }, { role: "user" as const, content: "What glows?" }];
    const { turns } = assembleContext({ instructions: "Be Nova.", history, userMessage: "Tell me more", knowledge: [], budget: 10_000, card: { lorebook: lore, examples: "" } });
    expect(turns[0]).toEqual({ role: "system", content: "BEFORE\n\nBe Nova.\n\nAFTER-1\n\nAFTER-2" });
  });
});
