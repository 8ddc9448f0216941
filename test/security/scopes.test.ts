import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { root } from "../support/contract.ts";
import { apiKeyFor } from "../support/users.ts";
import { call, deletionsLast, scopedOperations, useWorld, validRequest } from "./support.ts";

// API5 Broken Function Level Authorization, from the scope table (issue 23 item 2): every
// operation that needs a credential is called with an API key of each scope of both key
// vocabularies. A scope that docs/scopes.md (generated from the contract and the server's scope
// rule) does not list for the operation gets 403 `forbidden`; one it lists gets past the check.
const fixture = useWorld({ strangers: true });

const VOCABULARIES = {
  "fine-grained": ["personas:read", "personas:write", "conversations:read", "conversations:write", "voice", "admin"],
  alternative: ["read", "chat", "admin"],
};

interface Row {
  operationId: string;
  granting: Set<string>;
}

/** The rows of docs/scopes.md: each operation with every scope of either vocabulary that grants it. */
function scopeTable(): Map<string, Row> {
  const text = readFileSync(resolve(root, "docs", "scopes.md"), "utf8");
  const rows = text
    .split("\n")
    .filter((line) => /^\| (GET|POST|PUT|DELETE|PATCH) \|/.test(line))
    .map((line) => {
      const cells = line.split("|").slice(1, -1).map((cell) => cell.trim());
      const scopes = (cell: string) => cell.split(",").map((s) => s.trim().replace(/`/g, "")).filter(Boolean);
      return { operationId: cells[2]!.replace(/`/g, ""), granting: new Set([...scopes(cells[4]!), ...scopes(cells[5]!)]) };
    });
  return new Map(rows.map((row) => [row.operationId, row]));
}

describe("API5: function level authorization", () => {
  const table = scopeTable();

  it("has a row in the scope table for every operation that needs a credential, and none for the others", () => {
    expect(scopedOperations.map((op) => op.operationId).filter((id) => !table.has(id))).toEqual([]);
    expect([...table.keys()].filter((id) => !scopedOperations.some((op) => op.operationId === id))).toEqual([]);
  });

  it("refuses every scope the table does not list with 403, and lets every listed one past the check, for both key vocabularies", async () => {
    const { service, world } = fixture;
    const user = world.a.user;
    const scopes = [...new Set(Object.values(VOCABULARIES).flat())];
    const keys = Object.fromEntries(await Promise.all(scopes.map(async (scope) => [scope, await apiKeyFor(service, user, [scope])] as const)));
    const wrong: string[] = [];
    for (const op of deletionsLast(scopedOperations)) {
      const granting = table.get(op.operationId)!.granting;
      // Refusals first: they change nothing. Then the granting scopes, whose calls may.
      const order = [...scopes.filter((s) => !granting.has(s)), ...scopes.filter((s) => granting.has(s))];
      for (const scope of order) {
        const request = validRequest(op, world.a, { "x-api-key": keys[scope]! }, 11);
        const answer = await call(service, request);
        const code = answer.contentType === "application/json" ? (JSON.parse(answer.text) as { error?: { code?: string } }).error?.code : undefined;
        if (!granting.has(scope) && !(answer.status === 403 && code === "forbidden")) wrong.push(`${op.operationId} with ${scope}: ${answer.status} ${code ?? ""}, expected 403 forbidden`);
        const refusedForScope = answer.status === 403 && /lacks the/.test(answer.text);
        if (granting.has(scope) && (answer.status === 401 || refusedForScope)) wrong.push(`${op.operationId} with ${scope}: ${answer.status} ${answer.text.slice(0, 160)}`);
      }
    }
    expect(wrong).toEqual([]);
  }, 300_000);
});
