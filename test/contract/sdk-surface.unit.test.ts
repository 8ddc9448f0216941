// Every operation names its SDK method in the contract (`@meta`, spec/lib/operation-meta.tsp), or
// says why the SDK has none; here the named method must exist on the client and call that
// operation's path.
import { describe, expect, it } from "vitest";
import { operations } from "../../server/toolkit/contract.ts";
import { createClient } from "../../sdk/src/index.ts";

const client = createClient({ baseUrl: "http://127.0.0.1:9" });

/** The value at a dotted path on the client (`auth.apiKeys.create`), with the object that holds it. */
function resolveOnClient(path: string): { holder: object | undefined; value: unknown } {
  let holder: object | undefined;
  let value: unknown = client;
  for (const part of path.split(".")) {
    holder = value as object | undefined;
    value = holder === undefined || holder === null ? undefined : (holder as Record<string, unknown>)[part];
  }
  return { holder, value };
}

describe("the SDK's surface", () => {
  const withMethod = operations.filter((op) => op.sdk !== undefined);

  it("has a method for most operations, and the rest say why not", () => {
    expect(withMethod.length).toBeGreaterThan(operations.length / 2);
    for (const op of operations.filter((candidate) => candidate.sdk === undefined)) expect(op.noSdk, op.operationId).toMatch(/\S/);
  });

  it.each(withMethod.map((op) => [op.operationId, op] as const))("%s: its SDK method exists and calls its path", (_id, op) => {
    const { holder, value } = resolveOnClient(op.sdk!);
    expect(typeof value, `client.${op.sdk} is a method`).toBe("function");
    // The method calls the path itself, or through a private method of its resource.
    const source = String(value);
    const own = source.includes(`"${op.path}"`);
    const delegated = /this\.#\w+\(/.test(source) && String(holder!.constructor).includes(`"${op.path}"`);
    expect(own || delegated, `client.${op.sdk} calls ${op.method} ${op.path}`).toBe(true);
  });
});
