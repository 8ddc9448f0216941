import { describe, expect, it } from "vitest";
import { firstProblem } from "../../server/areas/cards/json-check.ts";

// The check of a card's JSON before it is stored (issue 31 L4): the first value nested too deep, or
// text PostgreSQL refuses, found without recursion, whatever the depth.

const nested = (levels: number) => {
  let value: unknown = {};
  for (let level = 1; level < levels; level++) value = { a: value };
  return value;
};
const deep = (path: string[]) => ({ path, problem: "too_deep" });

describe("firstProblem", () => {
  it("answers nothing for a value within the limit, the top being level 1", () => {
    expect(firstProblem(nested(5), 5)).toBeUndefined();
    expect(firstProblem({ a: [1, "two", null, { b: [] }], c: {}, "ünï 🌌": "ok" }, 4)).toBeUndefined();
    expect(firstProblem("text", 1)).toBeUndefined();
    expect(firstProblem(null, 1)).toBeUndefined();
  });

  it("names the path to the first container past the depth limit, through objects and arrays", () => {
    expect(firstProblem(nested(6), 5)).toEqual(deep(["a", "a", "a", "a", "a"]));
    expect(firstProblem({ ok: { x: 1 }, list: [0, { deep: [[]] }] }, 3)).toEqual(deep(["list", "1", "deep"]));
    expect(firstProblem({ first: [[[]]], second: [[[]]] }, 3)).toEqual(deep(["first", "0", "0"]));
  });

  it("names a string or a property name holding NUL or a lone surrogate, which jsonb refuses", () => {
    expect(firstProblem({ a: ["fine", "nul\u0000"] }, 64)).toEqual({ path: ["a", "1"], problem: "must not contain the NUL character (U+0000)" });
    expect(firstProblem({ a: { b: "x\ud800y" } }, 64)).toEqual({ path: ["a", "b"], problem: "must be well-formed Unicode (it holds a lone UTF-16 surrogate)" });
    expect(firstProblem({ a: { ["k\udc00"]: 1 } }, 64)).toEqual({ path: ["a"], problem: "has a property name that must be well-formed Unicode (it holds a lone UTF-16 surrogate)" });
    expect(firstProblem({ ["\u0000"]: 1 }, 64)).toEqual({ path: [], problem: "has a property name that must not contain the NUL character (U+0000)" });
    expect(firstProblem({ pair: "😀 is two units, one character" }, 64)).toBeUndefined();
  });

  it("walks a value nested a million deep without overflowing the stack, stopping at the limit", () => {
    const arrays = JSON.parse(`${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}`);
    expect(firstProblem(arrays, 64)?.path).toHaveLength(64);
    expect(firstProblem(nested(100_000), 100_001)).toBeUndefined();
  });
});
