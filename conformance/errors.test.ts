import { describe, expect, it } from "vitest";
import { contract } from "../test/support/contract.ts";
import { target } from "./support/target.ts";

// The mock answers each error status with that status's own example (issue 13, items 3 and 5):
// a frontend team working against it sees the body the real server would send.
const CODE_BY_STATUS: Record<string, string[]> = {
  "400": ["invalid_request"],
  "401": ["unauthorized"],
  "402": ["plan_limit_exceeded"],
  "403": ["forbidden"],
  "404": ["not_found"],
  "409": ["conflict"],
  "413": ["payload_too_large"],
  "415": ["unsupported_media_type"],
  "429": ["rate_limited"],
  "500": ["internal_error"],
  "501": ["not_implemented"],
  "502": ["upstream_error"],
  "503": ["provider_unavailable", "service_unavailable"],
};

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  example?: unknown;
}
interface Spec {
  operationId: string;
  parameters?: Parameter[];
  security?: Record<string, string[]>[];
  responses: Record<string, unknown>;
}

const operations = Object.entries(contract.paths).flatMap(([path, item]) =>
  Object.entries(item as Record<string, Spec>).map(([method, spec]) => ({ path, method: method.toUpperCase(), spec })),
);

function url(path: string, spec: Spec): string {
  const filled = path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const example = spec.parameters?.find((p) => p.in === "path" && p.name === name)?.example;
    return encodeURIComponent(String(example));
  });
  return `${target.baseUrl}${filled}`;
}

const secured = (spec: Spec) => (spec.security ?? []).some((requirement) => Object.keys(requirement).length > 0);

async function errorCode(response: Response): Promise<string | undefined> {
  const text = await response.text();
  try {
    return (JSON.parse(text) as { error?: { code?: string } }).error?.code;
  } catch {
    return undefined;
  }
}

describe.skipIf(target.kind !== "mock")("the mock's error bodies", () => {
  it("answers a call without credentials with 401 unauthorized, on every operation that needs them", async () => {
    const wrong: string[] = [];
    for (const { path, method, spec } of operations.filter((op) => secured(op.spec))) {
      const response = await fetch(url(path, spec), { method, redirect: "manual" });
      const code = await errorCode(response);
      // The OpenAI-compatible prefix answers in OpenAI's shape, whose code for this is invalid_api_key.
      const expected = path.startsWith("/openai/") ? "invalid_api_key" : "unauthorized";
      if (response.status !== 401 || code !== expected) wrong.push(`${spec.operationId}: ${response.status} ${code}`);
    }
    expect(wrong).toEqual([]);
  });

  it("answers every declared error status of a GET with that status's own code", async () => {
    const wrong: string[] = [];
    let checked = 0;
    const simpleGets = operations.filter(({ method, spec }) => method === "GET" && !(spec.parameters ?? []).some((p) => p.in === "query" && p.required));
    for (const { path, spec } of simpleGets) {
      // The shared error responses; a status with a body of its own (/readyz's 503) is not an error body.
      const errorStatuses = Object.entries(spec.responses).filter(([s, r]) => s in CODE_BY_STATUS && (r as { $ref?: string }).$ref?.startsWith("#/components/responses/"));
      for (const [status] of errorStatuses) {
        const credential: Record<string, string> = secured(spec) ? { authorization: "Bearer mock" } : {};
        const response = await fetch(url(path, spec), { headers: { ...credential, prefer: `code=${status}` }, redirect: "manual" });
        const code = await errorCode(response);
        checked++;
        if (String(response.status) !== status || !CODE_BY_STATUS[status]!.includes(code ?? "")) wrong.push(`${spec.operationId} ${status}: ${response.status} ${code}`);
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect(wrong).toEqual([]);
  });
});
