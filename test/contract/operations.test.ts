import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { documentedExtensions, operations as byId, readEndpointList, root } from "../support/contract.ts";

const operations = [...byId.values()];
const key = (op: { method: string; path: string }) => `${op.method} ${op.path}`;

describe("the contract's operations", () => {
  it("holds exactly the 95 operations of endpoints.txt plus the documented extensions", () => {
    const specified = readEndpointList(resolve(root, "spec", "endpoints.txt"));
    expect(specified).toHaveLength(95);
    const extensions = documentedExtensions().map(key);
    expect(extensions.length).toBeGreaterThan(0);

    const inContract = operations.map(key).sort();
    expect(inContract).toEqual([...specified, ...extensions].sort());
  });

  it("uses the operationIds that docs/decisions.md gives for the extensions", () => {
    for (const extension of documentedExtensions()) {
      const op = operations.find((candidate) => key(candidate) === key(extension));
      expect(op?.operationId, key(extension)).toBe(extension.operationId);
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

  it("asks for credentials everywhere except the credential-free endpoints", () => {
    const specCredentialFree = [
      "POST /v1/auth/register",
      "POST /v1/auth/login",
      "POST /v1/auth/refresh",
      "POST /v1/auth/forgot-password",
      "POST /v1/auth/reset-password",
      "GET /v1/oauth/authorize",
      "POST /v1/oauth/token",
      "GET /v1/marketplace",
      "GET /v1/marketplace/featured",
      "GET /v1/marketplace/categories",
      "GET /v1/marketplace/{id}",
      "GET /v1/marketplace/{id}/reviews",
    ];
    // The extensions are credential-free by design: probes, signed links, form posts, provider callbacks;
    // except the webhook delivery log, the room event stream and the generations of a conversation,
    // the caller's own data like the rest of their areas, character cards, and the OpenAI-compatible
    // prefix, which acts for the caller like the conversations it replies through.
    const authedExtensions = [
      "GET /v1/webhooks/{id}/deliveries",
      "POST /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver",
      "GET /v1/rooms/{id}/events",
      "GET /v1/conversations/{id}/generations/{generation_id}",
      "GET /v1/conversations/{id}/generations/{generation_id}/stream",
      "POST /v1/conversations/{id}/generations/{generation_id}/stop",
      // Character cards (issue 22): the personas scopes.
      "POST /v1/personas/import",
      "GET /v1/personas/{id}/card",
      "GET /openai/v1/models",
      "GET /openai/v1/models/{model}",
      "POST /openai/v1/chat/completions",
    ];
    // Chat control on one's own conversations (issue 21) needs the conversations scopes too.
    const chatControl = /^(GET|POST) \/v1\/conversations\/\{id\}\//;
    const extensions = documentedExtensions().map(key).filter((extension) => !authedExtensions.includes(extension) && !chatControl.test(extension));
    for (const op of operations) {
      const open = !op.security?.length || op.security.some((requirement) => Object.keys(requirement).length === 0);
      if (specCredentialFree.includes(key(op)) || extensions.includes(key(op))) {
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
});
