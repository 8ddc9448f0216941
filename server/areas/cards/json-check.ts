// What a card's JSON must be to be stored and served (issue 31 L4): nested at most so deep, since
// JSON.parse reads any depth but JSON.stringify (the insert's jsonb text, the export) recurses, and
// threw a RangeError, a 500, for `extensions` nested 5,000 deep; and text PostgreSQL takes, since
// jsonb refuses NUL and lone UTF-16 surrogates (a 500 as well). Request bodies get the same text
// check before any handler (server/toolkit/http/well-formed.ts); a card arrives as a file, which that check
// does not read. The walk keeps its own stack, so that a value nested a million deep costs `limit`
// steps down and never overflows the call stack.

/** The first thing wrong in a card's JSON: where (property names and array indexes from the top), and what. */
export interface JsonProblem {
  path: string[];
  /** `too_deep`: the container at `path` is past the depth limit; else what is wrong with the text at `path`. */
  problem: "too_deep" | string;
}

// With the u flag a surrogate pair is one code point, so only a lone surrogate matches.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** What is wrong with `text` for PostgreSQL, if anything (as server/toolkit/http/well-formed.ts says it). */
function textProblem(text: string): string | undefined {
  if (text.includes("\u0000")) return "must not contain the NUL character (U+0000)";
  if (LONE_SURROGATE.test(text)) return "must be well-formed Unicode (it holds a lone UTF-16 surrogate)";
  return undefined;
}

const isContainer = (value: unknown): value is object => typeof value === "object" && value !== null;

/**
 * The first problem met walking `root` depth first: an object or array deeper than `depthLimit`
 * levels (`root` being level 1), a string or a property name with text PostgreSQL refuses.
 */
export function firstProblem(root: unknown, depthLimit: number): JsonProblem | undefined {
  if (typeof root === "string") {
    const problem = textProblem(root);
    return problem ? { path: [], problem } : undefined;
  }
  if (!isContainer(root)) return undefined;
  // The stack as parallel arrays (a container, its property names or null for an array, the next
  // index to visit), reused level by level: a wide card allocates one array of names per object.
  const values: object[] = [root];
  const names: (string[] | null)[] = [];
  const next: number[] = [0];
  let top = 0;
  const open = (value: object): JsonProblem | undefined => {
    const keys = Array.isArray(value) ? null : Object.keys(value);
    names[top] = keys;
    for (const key of keys ?? []) {
      const problem = textProblem(key);
      if (problem) return { path: pathTo(names, next, top - 1), problem: `has a property name that ${problem}` };
    }
    return undefined;
  };
  const rootProblem = open(root);
  if (rootProblem) return rootProblem;
  while (top >= 0) {
    const value = values[top]!;
    const keys = names[top]!;
    const index = next[top]!;
    if (index >= (keys ? keys.length : (value as unknown[]).length)) {
      top--;
      continue;
    }
    next[top] = index + 1;
    const child = keys ? (value as Record<string, unknown>)[keys[index]!] : (value as unknown[])[index];
    if (typeof child === "string") {
      const problem = textProblem(child);
      if (problem) return { path: pathTo(names, next, top), problem };
      continue;
    }
    if (!isContainer(child)) continue;
    if (top + 1 >= depthLimit) return { path: pathTo(names, next, top), problem: "too_deep" };
    top++;
    values[top] = child;
    next[top] = 0;
    const problem = open(child);
    if (problem) return problem;
  }
  return undefined;
}

/** The names down to the value the container at `top` has just given (each level's last visited index). */
function pathTo(names: readonly (string[] | null)[], next: readonly number[], top: number): string[] {
  const path: string[] = [];
  for (let level = 0; level <= top; level++) {
    const index = next[level]! - 1;
    path.push(names[level] ? names[level]![index]! : String(index));
  }
  return path;
}
