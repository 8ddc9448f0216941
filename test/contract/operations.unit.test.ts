import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { operations as metadata } from "../../server/toolkit/contract.ts";
import { operations as byId, readEndpointList, root } from "../support/contract.ts";

// What each operation is (specified or an extension, credential-free or not, its SDK method) is its
// `@meta` in the contract (spec/lib/operation-meta.tsp), read here from generated/operations.json.
const operations = [...byId.values()];
const key = (op: { method: string; path: string }) => `${op.method} ${op.path}`;

describe("the contract's operations", () => {
  it("holds exactly the 95 operations of endpoints.txt plus the extensions its metadata names", () => {
    const specified = readEndpointList(resolve(root, "spec", "endpoints.txt"));
    expect(specified).toHaveLength(95);
    const extensions = metadata.filter((op) => op.extension !== undefined);
    expect(extensions.length).toBeGreaterThan(0);

    expect(metadata.filter((op) => op.extension === undefined).map(key).sort()).toEqual([...specified].sort());
    expect(operations.map(key).sort()).toEqual([...specified, ...extensions.map(key)].sort());
  });

  it("gives every operation its metadata: why an extension exists, and its SDK method or why there is none", () => {
    expect(metadata.map((op) => op.operationId)).toEqual(operations.map((op) => op.operationId));
    for (const op of metadata) {
      for (const reason of [op.extension, op.credentialFree, op.sdk, op.noSdk]) if (reason !== undefined) expect(reason.trim(), op.operationId).not.toBe("");
      expect([op.sdk, op.noSdk].filter((field) => field !== undefined), `${op.operationId}: exactly one of sdk and noSdk`).toHaveLength(1);
    }
  });

  it("vendors an exact copy of the shared endpoint list when it is beside the repository", () => {
    const shared = resolve(root, "..", "shared", "spec", "endpoints.txt");
    if (!existsSync(shared)) return;
    expect(readFileSync(resolve(root, "spec", "endpoints.txt"), "utf8")).toBe(readFileSync(shared, "utf8"));
  });

  it("names every operation area_action in lower snake case, uniquely", () => {
    const ids = operations.map((op) => op.operationId);
    for (const id of ids) expect(id).toMatch(/^[a-z]+(_[a-z0-9]+)+$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("asks for credentials everywhere except where the metadata says why not", () => {
    const credentialFree = new Map(metadata.map((op) => [op.operationId, op.credentialFree]));
    expect([...credentialFree.values()].filter(Boolean).length).toBeGreaterThan(0);
    for (const op of operations) {
      const open = !op.security?.length || op.security.some((requirement) => Object.keys(requirement).length === 0);
      if (credentialFree.get(op.operationId) !== undefined) {
        expect(open, `${key(op)} must be credential-free`).toBe(true);
        continue;
      }
      expect(open, `${key(op)} must require credentials`).toBe(false);
      const schemes = op.security!.flatMap((requirement) => Object.keys(requirement)).sort();
      expect(schemes, key(op)).toEqual(["ApiKeyAuth", "BearerAuth", "OAuth2Auth"]);
      const scopes = op.security!.find((requirement) => requirement.OAuth2Auth)?.OAuth2Auth;
      expect(scopes, `${key(op)} names the one OAuth scope it needs`).toHaveLength(1);
    }
  });

  it("takes an Idempotency-Key exactly where the operation declares the header", () => {
    for (const op of metadata) {
      const declared = byId.get(op.operationId)!.parameters.some((p) => p.in === "header" && p.name.toLowerCase() === "idempotency-key");
      expect(op.idempotent, op.operationId).toBe(declared);
    }
  });
});
