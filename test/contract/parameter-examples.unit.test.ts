import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import YAML from "yaml";
import { root } from "../support/contract.ts";

// Contract testers (Dredd among them) build each request from the parameters' examples: every path
// parameter needs one (issue 24, item 8).
describe("parameter examples", () => {
  const doc = YAML.parse(readFileSync(resolve(root, "generated", "openapi.yaml"), "utf8")) as {
    paths: Record<string, Record<string, { operationId?: string; parameters?: { name: string; in: string; example?: unknown }[] }>>;
  };

  it("gives every path parameter of every operation an example", () => {
    const missing: string[] = [];
    let count = 0;
    for (const item of Object.values(doc.paths)) {
      for (const op of Object.values(item)) {
        for (const parameter of op.parameters ?? []) {
          if (parameter.in !== "path") continue;
          count++;
          if (parameter.example === undefined) missing.push(`${op.operationId}: ${parameter.name}`);
        }
      }
    }
    expect(count).toBeGreaterThan(50);
    expect(missing).toEqual([]);
  });
});

describe("error examples", () => {
  const doc = YAML.parse(readFileSync(resolve(root, "generated", "openapi.yaml"), "utf8")) as {
    components: {
      responses: Record<string, { content: { "application/json": { schema: { $ref: string } } } }>;
      schemas: Record<string, { example?: { error?: { code?: string; details?: Record<string, unknown> } } }>;
      headers: Record<string, { schema: { minimum?: number } }>;
    };
  };
  const expected: Record<string, string> = {
    BadRequest: "invalid_request", Unauthorized: "unauthorized", PaymentRequired: "plan_limit_exceeded", Forbidden: "forbidden",
    NotFound: "not_found", Conflict: "conflict", PayloadTooLarge: "payload_too_large", UnsupportedMediaType: "unsupported_media_type",
    TooManyRequests: "rate_limited", InternalError: "internal_error", NotImplemented: "not_implemented", UpstreamError: "upstream_error",
    ServiceUnavailable: "provider_unavailable",
  };

  it("gives each error response an example body with its own status's code (issue 13, item 3)", () => {
    for (const [name, code] of Object.entries(expected)) {
      const ref = doc.components.responses[name]!.content["application/json"].schema.$ref;
      const example = doc.components.schemas[ref.split("/").pop()!]!.example;
      expect(example?.error?.code, name).toBe(code);
    }
    const quota = doc.components.schemas.PaymentRequiredError!.example!.error!.details!;
    expect(Object.keys(quota).sort()).toEqual(["limit", "plan", "used"]);
  });

  it("declares the rate-limit headers non-negative", () => {
    for (const name of ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"]) {
      expect(doc.components.headers[name]!.schema.minimum, name).toBe(0);
    }
  });
});
