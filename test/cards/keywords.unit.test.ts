import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { KeywordSet } from "../../server/areas/cards/keywords.ts";

// The lorebook's keyword automaton (issue 31 H2) against the rule it replaces: a keyword is found
// exactly when `text.includes(keyword)`, code unit by code unit, whatever the text holds.

const found = (keywords: string[], text: string) => {
  const hits = new KeywordSet(keywords).found(text);
  return keywords.filter((_, id) => hits[id] === 1);
};
const included = (keywords: string[], text: string) => keywords.filter((keyword) => text.includes(keyword));

// Few distinct units, so that keywords overlap, nest and share prefixes and suffixes often; with
// both halves of a surrogate pair, a lone half, a letter whose lowercase is longer (İ) and a
// combining mark, which `includes` treats as separate units and a grapheme matcher would not.
const UNITS = ["a", "b", "ab", "\u0301", "e", "İ", "😀", "\ud83d", "\ude00", " ", "\n"];
const smallText = (maxLength: number) => fc.array(fc.constantFrom(...UNITS), { maxLength }).map((parts) => parts.join(""));
const keywordSets = (keyword: fc.Arbitrary<string>) => fc.uniqueArray(keyword.filter((key) => key.length > 0), { maxLength: 12 });

describe("KeywordSet", () => {
  it("finds the classic overlapping keywords, each once", () => {
    expect(found(["he", "she", "his", "hers"], "ushers")).toEqual(["he", "she", "hers"]);
    expect(found(["a", "aa", "aaa", "b"], "a".repeat(1000))).toEqual(["a", "aa", "aaa"]);
    expect(found(["x"], "")).toEqual([]);
    expect(found([], "anything")).toEqual([]);
  });

  it("works on UTF-16 code units, as includes does: inside emoji and around combining marks", () => {
    expect(found(["e", "é", "\ud83d", "👩", "👩‍👧"], "cafe\u0301 👩‍👧")).toEqual(["e", "\ud83d", "👩", "👩‍👧"]);
  });

  it("refuses an empty or repeated keyword", () => {
    expect(() => new KeywordSet([""])).toThrow(RangeError);
    expect(() => new KeywordSet(["a", "b", "a"])).toThrow(RangeError);
  });

  it("finds exactly the keywords text.includes finds, over a small alphabet", () => {
    fc.assert(
      fc.property(keywordSets(smallText(6)), smallText(60), (keywords, text) => {
        expect(found(keywords, text)).toEqual(included(keywords, text));
      }),
      { numRuns: 2_000 },
    );
  });

  it("finds exactly the keywords text.includes finds, over any UTF-16 text", () => {
    const unit = fc.string({ unit: "binary", maxLength: 4 });
    fc.assert(
      fc.property(keywordSets(unit), fc.array(fc.oneof(unit, fc.constantFrom(...UNITS)), { maxLength: 40 }), (keywords, parts) => {
        // Keywords placed in the text now and then, so that hits are not all chance.
        const text = parts.map((part, index) => (index % 3 === 0 && keywords.length > 0 ? keywords[index % keywords.length]! : part)).join("");
        expect(found(keywords, text)).toEqual(included(keywords, text));
      }),
      { numRuns: 300 },
    );
  });

  it("gives the same answers on a second search: nothing of one search stays for the next", () => {
    fc.assert(
      fc.property(keywordSets(smallText(4)), smallText(30), smallText(30), (keywords, first, second) => {
        const set = new KeywordSet(keywords);
        set.found(first);
        const hits = set.found(second);
        expect(keywords.filter((_, id) => hits[id] === 1)).toEqual(included(keywords, second));
      }),
      { numRuns: 500 },
    );
  });
});
