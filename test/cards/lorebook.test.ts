import { describe, expect, it } from "vitest";
import { DEFAULT_SCAN_DEPTH, fitEntries, LORE_SHARE, matchEntries, withCardContext } from "../../server/cards/lorebook.ts";
import type { CharacterBook } from "../../server/cards/mapping.ts";
import { countTokens } from "../../server/providers/llm/tokens.ts";
import { assembleContext } from "../../server/replies/context.ts";

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

  it("scans the new message and the history in assembleContext, the entries landing in the system turn", () => {
    const history = [{ role: "assistant" as const, content: "The nebula glows." }, { role: "user" as const, content: "What glows?" }];
    const { turns } = assembleContext({ instructions: "Be Nova.", greeting: null, history, userMessage: "Tell me more", knowledge: [], budget: 10_000, card: { lorebook: lore, examples: "" } });
    expect(turns[0]).toEqual({ role: "system", content: "BEFORE\n\nBe Nova.\n\nAFTER-1\n\nAFTER-2" });
  });
});
