import { describe, expect, it } from "vitest";
import { assembleContext, formatKnowledge, KNOWLEDGE_PREAMBLE } from "../../server/areas/replies/context.ts";
import type { PastTurn } from "../../server/areas/replies/types.ts";
import { countChatTokens, countTokens } from "../../server/toolkit/providers/llm/tokens.ts";

// Context assembly: what the model is sent, and what is left out when the budget is tight.
const message = (i: number, content = `message number ${i} `.repeat(10)): PastTurn => ({
  id: `m${i}`,
  role: i % 2 === 0 ? "user" : "assistant",
  content,
  tokens: countTokens(content),
});
// The store reads history newest first.
const history = (count: number) => Array.from({ length: count }, (_, i) => message(i)).reverse();
const chunk = (i: number, content: string) => ({ chunk_id: `k${i}`, document_id: "d", filename: "guide.md", chunk_index: i, similarity: 0.9, content });

describe("assembleContext", () => {
  it("orders instructions, history oldest first (a greeting the oldest of it), then the new message", () => {
    const greeting: PastTurn = { role: "assistant", content: "Hi cadet!" };
    const { turns, used } = assembleContext({ instructions: "Be Nova.", history: [...history(3), greeting], userMessage: "Now?", knowledge: [], budget: 10_000 });
    expect(turns.map((t) => t.role)).toEqual(["system", "assistant", "user", "assistant", "user", "user"]);
    expect(turns[0]!.content).toBe("Be Nova.");
    expect(turns[1]!.content).toBe("Hi cadet!");
    expect(turns[2]!.content).toContain("message number 0");
    expect(turns.at(-1)!.content).toBe("Now?");
    expect(used).toEqual([]);
  });

  it("keeps the most recent messages that fit the budget and stays within it", () => {
    const budget = 400;
    const { turns, tokens } = assembleContext({ instructions: "Be Nova.", history: history(40), userMessage: "Now?", knowledge: [], budget });
    const kept = turns.slice(1, -1);
    expect(kept.length).toBeGreaterThan(2);
    expect(kept.length).toBeLessThan(40);
    expect(kept.at(-1)!.content).toContain("message number 39");
    expect(tokens).toBeLessThanOrEqual(budget);
    expect(countChatTokens(turns)).toBeLessThanOrEqual(budget + 10);
  });

  it("puts knowledge after the instructions, marked with its source, within its share of the budget", () => {
    const knowledge = [chunk(0, "Venus is the brightest planet."), chunk(1, "Mars is red. ".repeat(400)), chunk(2, "Jupiter is big.")];
    const { turns, used } = assembleContext({ instructions: "Be Nova.", history: history(2), userMessage: "Venus?", knowledge, budget: 2_000 });
    expect(used.map((c) => c.chunk_id)).toEqual(["k0", "k2"]);
    expect(turns[1]).toEqual({ role: "system", content: `${KNOWLEDGE_PREAMBLE}\n\n${formatKnowledge(knowledge[0]!)}\n\n${formatKnowledge(knowledge[2]!)}` });
    expect(turns[1]!.content).toContain("[source: guide.md#0]\nVenus is the brightest planet.");
  });

  it("cuts instructions longer than half the budget", () => {
    const { turns } = assembleContext({ instructions: "word ".repeat(5_000), history: [], userMessage: "hi", knowledge: [], budget: 1_000 });
    expect(countTokens(turns[0]!.content)).toBeLessThanOrEqual(500);
  });
});
