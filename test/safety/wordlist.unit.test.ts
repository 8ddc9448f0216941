import { describe, expect, it } from "vitest";
import { parseWordList, WordListModeration } from "../../server/toolkit/providers/moderation/wordlist.ts";

// The offline word list (issue 41): whole words in any case, phrases across spaces and
// punctuation, `[category]` headings, comments; the shipped list loads and flags its own entries.
describe("the word-list moderation provider", () => {
  const provider = new WordListModeration(parseWordList("# comment\nplainword\n[spam]\nbuy now cheap\n[hate]\nbad-guy # trailing comment\n"));

  it("flags whole words in any letter case, with their category", async () => {
    expect(await provider.check(["So PLAINWORD here."])).toEqual({ flagged: true, categories: ["flagged-term"] });
    expect(await provider.check(["plainwords are fine", "xplainword"])).toEqual({ flagged: false, categories: [] });
  });

  it("matches a phrase across spaces and punctuation, and names every category found", async () => {
    expect(await provider.check(["Buy  now, cheap!", "what a bad-guy"])).toEqual({ flagged: true, categories: ["spam", "hate"] });
  });

  it("escapes the entries: a list's punctuation is no pattern", async () => {
    const dotted = new WordListModeration(parseWordList("a.b\n"));
    expect((await dotted.check(["axb"])).flagged).toBe(false);
    expect((await dotted.check(["a.b"])).flagged).toBe(true);
  });

  it("ships a list that loads and flags its entries", async () => {
    const shipped = WordListModeration.load();
    expect(await shipped.check(["You should kill yourself"])).toEqual({ flagged: true, categories: ["self-harm"] });
    expect((await shipped.check(["A lovely day at sea"])).flagged).toBe(false);
  });
});
