import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { OpenAPIV3 } from "express-openapi-validator/dist/framework/types.js";

export const contractPath = fileURLToPath(new URL("../../generated/openapi.yaml", import.meta.url));

/** What the service needs of each operation of the contract; compiled by `npm run gen` (scripts/gen-validators.mjs). */
export interface OperationInfo {
  operationId: string;
  method: string;
  /** The contract's path (`/v1/personas/{id}`). */
  path: string;
  /** The same path as an Express route (`/v1/personas/:id`). */
  expressRoute: string;
  /** The OAuth scope the contract names for the operation; undefined when credential-free. */
  scope: string | undefined;
  /** Declares an `Idempotency-Key` header. */
  idempotent: boolean;
  /** Why it exists beyond the specification's endpoints; undefined when specified (its `@meta`, spec/lib/operation-meta.tsp). */
  extension?: string;
  /** Why it takes no credentials; present exactly when its security admits an anonymous caller. */
  credentialFree?: string;
  /** The SDK's method for it, as its path on the client (`auth.apiKeys.create`). */
  sdk?: string;
  /** Why the SDK has no method for it; present exactly when `sdk` is absent. */
  noSdk?: string;
  /** A page for browsers, served through the page stages (server/app.ts); only on a credential-free operation without an SDK method. */
  page?: true;
  /** Why it may read from a replica (lag-tolerant, writes nothing); undefined when it reads from the primary. */
  replicaRead?: string;
  /** Its success response is JSON (false for streams, binary bodies, HTML and redirects). */
  answersJson: boolean;
  /** The security requirements: each a list of scheme names that must all be present. `[[]]`: none. */
  security: string[][];
  /** The request body: whether required, and the key of its compiled validator per media type. */
  requestBody: { required: boolean; media: Record<string, string> } | null;
  /** Takes multipart/form-data (uploads). */
  multipart: boolean;
  /** Integer parameters (or arrays of them); header names lower-cased. */
  integers: { in: "query" | "path" | "header"; name: string }[];
  query: {
    /** Every declared query parameter. */
    names: string[];
    /** Parameters whose raw value may not hold reserved characters (those without allowReserved). */
    reserved: { name: string; allowComma: boolean }[];
    /** Parameters whose value is read as JSON when it parses (object or allOf schemas). */
    json: string[];
    allowEmpty: string[];
  };
}

/** Every operation, in the document's order. */
export const operations: OperationInfo[] = JSON.parse(
  readFileSync(fileURLToPath(new URL("../../generated/operations.json", import.meta.url)), "utf8"),
) as OperationInfo[];

/**
 * The operations in the order their routes must be tried: a static segment before a parameter in
 * its place (`/v1/personas/explore` before `/v1/personas/:id`), as express-openapi-validator sorted them.
 */
export const routeOrder: OperationInfo[] = [...operations].sort((a, b) => {
  const [x, y] = [a.expressRoute.replace(/\/:/g, "/~"), b.expressRoute.replace(/\/:/g, "/~")];
  if (x.startsWith(y)) return -1;
  if (y.startsWith(x)) return 1;
  return x > y ? 1 : -1;
});

export const operationsById = new Map(operations.map((op) => [op.operationId, op]));

/**
 * The OpenAPI document itself, parsed on first use: only response validation (tests) and tools need
 * it, and parsing its YAML was a third of a second and 40 MB at every start.
 */
export async function loadContract(): Promise<OpenAPIV3.DocumentV3> {
  const { default: YAML } = await import("yaml");
  return YAML.parse(readFileSync(contractPath, "utf8")) as OpenAPIV3.DocumentV3;
}
