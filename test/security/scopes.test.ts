import { describe, expect, it } from "vitest";
import { allows } from "../../server/areas/auth/scopes.ts";
import { operationsById } from "../../server/toolkit/contract.ts";
import type { Principal } from "../../server/toolkit/http/principal.ts";
import { apiKeyFor } from "../support/users.ts";
import { call, deletionsLast, scopedOperations, useWorld, validRequest } from "./support.ts";

// API5 Broken Function Level Authorization, from the scope rule (issue 23 item 2): every
// operation that needs a credential is called with an API key of each scope of both key
// vocabularies. A scope that the server's scope rule does not grant for the operation's contract
// scope (the rule docs/scopes.md is generated from) gets 403 `forbidden`; one it grants gets past
// the check, so the pipeline enforces on every operation what the rule and the docs say. Each
// refusal names the scope needed and what grants it (issue 34 item 4).
const fixture = useWorld({ strangers: true });

const VOCABULARIES = {
  "fine-grained": ["personas:read", "personas:write", "conversations:read", "conversations:write", "voice", "admin"],
  alternative: ["read", "chat", "admin"],
};

/** Every scope of either vocabulary that the server's scope rule grants for the operation. */
function grantingScopes(operationId: string): Set<string> {
  const op = operationsById.get(operationId)!;
  const keyWith = (scope: string): Principal => ({ userId: "-", kind: "api_key", scopes: new Set([scope]), apiKeyId: "-" });
  return new Set(Object.values(VOCABULARIES).flat().filter((scope) => allows(keyWith(scope), op)));
}

interface ErrorInfo {
  code?: string;
  message?: string;
  details?: { required_scope?: string; granting_scopes?: string[] };
}

/**
 * What a refusal for a missing scope must say (issue 34 item 4): the scope the contract names, a
 * scope of each key vocabulary that grants the operation, and in `details` every granting scope
 * (in Persona's error envelope; the /openai/v1 door answers OpenAI's, with the message only).
 */
function namesWhatGrants(operationId: string, scope: string, error: ErrorInfo): string[] {
  const op = operationsById.get(operationId)!;
  const granting = grantingScopes(operationId);
  const problems: string[] = [];
  const message = error.message ?? "";
  if (!message.includes(`"${op.scope}"`)) problems.push(`${operationId} with ${scope}: the message does not name "${op.scope}": ${message}`);
  for (const [vocabulary, scopes] of Object.entries(VOCABULARIES)) {
    if (!scopes.some((s) => granting.has(s) && message.includes(`"${s}"`))) problems.push(`${operationId} with ${scope}: the message names no ${vocabulary} scope that grants it: ${message}`);
  }
  // The OpenAI-compatible door answers OpenAI's error shape: the message, without Persona's details.
  if (op.path.startsWith("/openai/")) return problems;
  if (error.details?.required_scope !== op.scope) problems.push(`${operationId} with ${scope}: details.required_scope is ${error.details?.required_scope}`);
  if ([...(error.details?.granting_scopes ?? [])].sort().join() !== [...granting].sort().join()) problems.push(`${operationId} with ${scope}: details.granting_scopes ${error.details?.granting_scopes?.join()} are not ${[...granting].join()}`);
  return problems;
}

describe("API5: function level authorization", () => {
  it("grants every operation that needs a credential to some scope of each vocabulary", () => {
    for (const [vocabulary, scopes] of Object.entries(VOCABULARIES)) {
      expect(scopedOperations.filter((op) => !scopes.some((scope) => grantingScopes(op.operationId).has(scope))).map((op) => `${vocabulary}: ${op.operationId}`)).toEqual([]);
    }
  });

  it("refuses every scope the rule does not grant with 403, and lets every granted one past the check, for both key vocabularies", async () => {
    const { service, world } = fixture;
    const user = world.a.user;
    const scopes = [...new Set(Object.values(VOCABULARIES).flat())];
    const keys = Object.fromEntries(await Promise.all(scopes.map(async (scope) => [scope, await apiKeyFor(service, user, [scope])] as const)));
    const wrong: string[] = [];
    for (const op of deletionsLast(scopedOperations)) {
      const granting = grantingScopes(op.operationId);
      // Refusals first: they change nothing. Then the granting scopes, whose calls may.
      const order = [...scopes.filter((s) => !granting.has(s)), ...scopes.filter((s) => granting.has(s))];
      // One request per operation (the same seed draws the same one), sent with each scope's key.
      const drawn = validRequest(op, world.a, {}, 11);
      for (const scope of order) {
        const answer = await call(service, { ...drawn, headers: { ...drawn.headers, "x-api-key": keys[scope]! } });
        const error = answer.contentType === "application/json" ? (JSON.parse(answer.text) as { error?: ErrorInfo }).error : undefined;
        const code = error?.code;
        if (!granting.has(scope) && !(answer.status === 403 && code === "forbidden")) wrong.push(`${op.operationId} with ${scope}: ${answer.status} ${code ?? ""}, expected 403 forbidden`);
        if (!granting.has(scope) && error) wrong.push(...namesWhatGrants(op.operationId, scope, error));
        const refusedForScope = answer.status === 403 && /lacks the/.test(answer.text);
        if (granting.has(scope) && (answer.status === 401 || refusedForScope)) wrong.push(`${op.operationId} with ${scope}: ${answer.status} ${answer.text.slice(0, 160)}`);
      }
    }
    expect(wrong).toEqual([]);
  }, 300_000);
});
