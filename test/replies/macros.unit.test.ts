import { describe, expect, it } from "vitest";
import { countTokens } from "../../server/toolkit/providers/llm/tokens.ts";
import { inputLimitMessage, inputTooLong, maxInputTokens, requireInputFits } from "../../server/areas/replies/input-limit.ts";
import { fillMacros, mentionsUser } from "../../server/areas/replies/macros.ts";

// Issue 34 item 2: the card macros SillyTavern fills, and those it leaves; item 6: the input limit.
const names = { char: "Captain Nova", user: "Mara" };

describe("fillMacros", () => {
  it("fills {{char}} and {{user}}, and the older <BOT>, <CHAR> and <USER>, in any letter case", () => {
    expect(fillMacros("I am {{char}}; welcome, {{user}}.", names)).toBe("I am Captain Nova; welcome, Mara.");
    expect(fillMacros("{{CHAR}} {{Char}} {{USER}} {{uSeR}}", names)).toBe("Captain Nova Captain Nova Mara Mara");
    expect(fillMacros("<BOT> greets <USER>; <CHAR> bows. <bot> <user> <Char>", names)).toBe("Captain Nova greets Mara; Captain Nova bows. Captain Nova Mara Captain Nova");
    expect(fillMacros("{{user}}{{char}}{{user}}", names)).toBe("MaraCaptain NovaMara");
  });

  it("leaves every other macro, and near misses, as written", () => {
    const others = "{{ user }} {{char }} {{random::a,b}} {{time}} {{date}} {{group}} {{charIfNotGroup}} {{// note}} {{persona}} {user} <users> <bot/> {{{char}}}";
    expect(fillMacros(others, names)).toBe("{{ user }} {{char }} {{random::a,b}} {{time}} {{date}} {{group}} {{charIfNotGroup}} {{// note}} {{persona}} {user} <users> <bot/> {Captain Nova}");
  });

  it("puts names in as written, in one pass: a name that looks like a macro or a replacement pattern is not filled again", () => {
    expect(fillMacros("{{char}} meets {{user}}", { char: "{{user}}", user: "<BOT>" })).toBe("{{user}} meets <BOT>");
    expect(fillMacros("Hi {{user}}", { char: "x", user: "$& $1 $$" })).toBe("Hi $& $1 $$");
  });

  it("answers text without a macro as it is, empty names included", () => {
    const text = "No macros here, only <b>markup</b> and {braces}.";
    expect(fillMacros(text, names)).toBe(text);
    expect(fillMacros("", names)).toBe("");
    expect(fillMacros("Hello {{user}}!", { char: "Nova", user: "" })).toBe("Hello !");
  });

  it("tells whether a text names the user", () => {
    expect(mentionsUser("Hello {{User}}")).toBe(true);
    expect(mentionsUser("Hello <user>")).toBe(true);
    expect(mentionsUser("Hello {{char}}")).toBe(false);
    expect(mentionsUser(null)).toBe(false);
  });
});

describe("the input limit", () => {
  const defaults = { contextTokens: 8192, maxOutputTokens: 1024 };

  it("is the context budget less the instructions' half and two turns' overhead", () => {
    // (8192 - 1024) = 7168; half of it, 3584, is the instructions'; 8 for the two turns.
    expect(maxInputTokens(defaults)).toBe(3576);
    expect(maxInputTokens({ contextTokens: 2048, maxOutputTokens: 512 })).toBe(760);
    // A server whose reply may take the whole window takes no message at all.
    expect(maxInputTokens({ contextTokens: 512, maxOutputTokens: 4096 })).toBe(0);
  });

  it("takes a message of exactly the limit and refuses one token more, naming both in tokens", () => {
    const llm = { contextTokens: 2048, maxOutputTokens: 512 };
    const fits = "word ".repeat(760).trimEnd();
    expect(countTokens(fits)).toBe(760);
    expect(inputTooLong(llm, fits)).toBeUndefined();
    const over = `${fits} word`;
    const refusal = inputTooLong(llm, over, "/body/content")!;
    expect(refusal.status).toBe(400);
    expect(refusal.code).toBe("invalid_request");
    expect(refusal.message).toBe(inputLimitMessage(761, llm));
    expect(refusal.message).toContain("761 tokens, over the limit of 760 tokens");
    expect(refusal.message).toContain("a context of 2,048 tokens, less 512 for the reply");
    expect(refusal.details).toEqual({ errors: [{ path: "/body/content", message: "is 761 tokens, over the limit of 760 tokens a message may have" }] });
    expect(() => requireInputFits(llm, over)).toThrow(/over the limit of 760 tokens/);
    expect(inputTooLong(llm, over, undefined, "The message this reply answers")!.message).toMatch(/^The message this reply answers is 761 tokens/);
  });

  it("counts tokens, not characters: the issue's 31,000-character message is over the default limit", () => {
    const message = "The quick brown fox jumps over the lazy dog. ".repeat(700).slice(0, 31_000);
    expect(inputTooLong({ contextTokens: 8192, maxOutputTokens: 1024 }, message, "/body/content")?.status).toBe(400);
    // Characters of several bytes each are still counted as the tokenizer counts them.
    expect(inputTooLong({ contextTokens: 8192, maxOutputTokens: 1024 }, "星".repeat(3000))).toBeUndefined();
    expect(inputTooLong({ contextTokens: 2048, maxOutputTokens: 512 }, "🌊".repeat(800))?.status).toBe(400);
  });
});
