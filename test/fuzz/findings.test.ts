import { describe, expect, it } from "vitest";
import { expectError } from "../support/assertions.ts";
import { useTestService } from "../support/fixtures.ts";
import { operations } from "./contract.ts";

// What the fuzzer found, each kept as a plain test over every operation it concerns, so that it
// stays fixed whatever seed a later run draws. docs/security.md lists them.
const fixture = useTestService();

const jsonBodies = operations.filter((op) => op.body?.alternatives.includes("application/json"));

describe("fuzzer findings", () => {
  it("a JSON body nested 100,000 deep (valid JSON) is answered like any other, not a 500 from a stack overflow, on every JSON operation", async () => {
    const { service, alice } = fixture;
    const bodies = [`${"[".repeat(100_000)}${"]".repeat(100_000)}`, `${'{"a":'.repeat(100_000)}"x"${"}".repeat(100_000)}`];
    for (const op of jsonBodies) {
      const path = op.path.replace(/\{[^}]+\}/g, "0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01");
      for (const body of bodies) {
        const response = await service.fetch(path, { method: op.method, headers: { ...alice.auth, "content-type": "application/json" }, body });
        // Refused as not matching the schema, or (an object under an unknown name) ignored.
        expect(op.statuses, `${op.operationId}: ${response.status}`).toContain(String(response.status));
        expect(response.status === 501 || response.status < 500, `${op.operationId}: ${response.status}`).toBe(true);
        const codes: Record<number, string> = { 400: "invalid_request", 404: "not_found", 409: "conflict", 413: "payload_too_large", 501: "not_implemented" };
        if (response.status >= 400) await expectError(response, response.status, codes[response.status]!);
        else await response.arrayBuffer();
      }
    }
  }, 120_000);
});
