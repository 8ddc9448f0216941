import { describe, expect, it } from "vitest";
import { flatten } from "../fuzz/arbitrary.ts";
import { operations, type Schema } from "../fuzz/contract.ts";
import { problemsOf } from "../fuzz/judge.ts";
import { call, useWorld, validRequest } from "./support.ts";

// API4 Unrestricted Resource Consumption (issue 23 item 2), from the contract: every list has a
// maximum page size that holds (max answers, max + 1 is a 400), every JSON or form body has the
// service's size limit (413 in the envelope), and every field of a body is bounded by the contract
// or listed below with what bounds it. Uploads: test/knowledge/limits.test.ts (10 MB + 1 byte is
// 413) and test/voice/offline.test.ts (25 MB + 1 byte is 413).
const fixture = useWorld({ strangers: true });

/** Body fields without a length limit of their own, each with what bounds it. */
const BOUNDED_ELSEWHERE: Record<string, string> = {
  "personas_create body.model": "must be one of the server's models (400 otherwise); the body limit",
  "personas_update body.model": "must be one of the server's models (400 otherwise); the body limit",
  "studio_test_chat body.version_id": "looked up as an id (404 otherwise); the body limit",
  "billing_provider_webhook body.id": "the payment provider's own event; the body limit",
  "billing_provider_webhook body.type": "the payment provider's own event; the body limit",
  "integrations_workspace_event body.type": "the workspace platform's own event (signed); the body limit",
};

function unbounded(schemaIn: Schema | undefined, where: string, out: string[], depth = 0): string[] {
  const s = flatten(schemaIn);
  if (depth > 6) return out;
  if (s.type === "string" && s.maxLength === undefined && !s.enum && !["uuid", "date-time", "date", "binary"].includes(String(s.format))) out.push(where);
  if (s.type === "array") {
    const items = flatten(s.items as Schema);
    // A set of enum values is bounded by the enum.
    if (s.maxItems === undefined && !(s.uniqueItems && items.enum)) out.push(`${where}[]`);
    unbounded(s.items as Schema, `${where}[]`, out, depth + 1);
  }
  for (const [name, sub] of Object.entries((s.properties ?? {}) as Record<string, Schema>)) unbounded(sub, `${where}.${name}`, out, depth + 1);
  return out;
}

const lists = operations.filter((op) => op.method === "GET" && op.parameters.some((p) => p.in === "query" && p.name === "limit"));
const bodies = operations.filter((op) => op.body && op.body.contentType !== "multipart/form-data");

describe("API4: limits", () => {
  it("every body field is bounded by the contract, or by what is listed here", () => {
    const found = operations.flatMap((op) => (op.body ? unbounded(op.body.schema, `${op.operationId} body`, []) : []));
    expect(found.filter((field) => !BOUNDED_ELSEWHERE[field])).toEqual([]);
  });

  it("every list declares a maximum page size", () => {
    expect(lists.length).toBeGreaterThan(15);
    expect(lists.filter((op) => flatten(op.parameters.find((p) => p.name === "limit")!.schema).maximum === undefined).map((op) => op.operationId)).toEqual([]);
  });

  it("every list answers its maximum page size and refuses one more with 400", async () => {
    const { service, world } = fixture;
    const wrong: string[] = [];
    for (const op of lists) {
      const max = Number(flatten(op.parameters.find((p) => p.name === "limit")!.schema).maximum);
      const request = validRequest(op, world.a, op.scope ? world.a.user.auth : {}, 41);
      const [path, query = ""] = request.path.split("?");
      const others = query.split("&").filter((pair) => pair && !pair.startsWith("limit="));
      for (const limit of [max, max + 1]) {
        const answer = await call(service, { ...request, path: `${path}?${[...others, `limit=${limit}`].join("&")}` });
        const refused = answer.status === 400 && answer.text.includes("/query/limit");
        if (limit === max ? answer.status === 400 : !refused) wrong.push(`${op.operationId} limit=${limit} -> ${answer.status} ${answer.text.slice(0, 160)}`);
        wrong.push(...problemsOf(op.operationId, answer).map((p) => `${op.operationId}: ${p}`));
      }
    }
    expect(wrong).toEqual([]);
  }, 180_000);

  it("every JSON or form body over the body limit is a 413 in the envelope", async () => {
    const { service, world } = fixture;
    const limit = service.services.config.bodyLimitBytes;
    const wrong: string[] = [];
    for (const op of bodies) {
      const request = validRequest(op, world.a, op.scope ? world.a.user.auth : {}, 43);
      const json = op.body!.contentType === "application/json";
      const body = new TextEncoder().encode(json ? `{"x":"${"a".repeat(limit)}"}` : `x=${"a".repeat(limit)}`);
      const answer = await call(service, { ...request, body, headers: { ...request.headers, "content-type": op.body!.contentType } });
      if (answer.status !== 413 || !answer.text.includes('"payload_too_large"')) wrong.push(`${op.operationId} -> ${answer.status} ${answer.text.slice(0, 120)}`);
      wrong.push(...problemsOf(op.operationId, answer).map((p) => `${op.operationId}: ${p}`));
    }
    expect(wrong).toEqual([]);
  }, 180_000);
});
