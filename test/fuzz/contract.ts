import { contract, operations as contractOperations } from "../support/contract.ts";

// The fuzzer's view of the contract: every operation of generated/openapi.json with its parameters,
// request body and scope, references resolved. Nothing here names an operation, so an operation
// that lands in the contract is fuzzed from the next run on.

export type Schema = Record<string, unknown>;

export interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required: boolean;
  schema: Schema;
}

export interface RequestBody {
  /** The first declared content type; `alternatives` lists every one. */
  contentType: string;
  alternatives: string[];
  schema: Schema;
  required: boolean;
}

export interface FuzzOperation {
  operationId: string;
  method: string;
  path: string;
  parameters: Parameter[];
  body: RequestBody | undefined;
  /** The OAuth scope the contract names; undefined for a credential-free operation. */
  scope: string | undefined;
  /** Declared response statuses. */
  statuses: string[];
}

interface RawOperation {
  operationId: string;
  parameters?: Schema[];
  requestBody?: { required?: boolean; content: Record<string, { schema?: Schema }> };
  responses: Record<string, unknown>;
  security?: Record<string, string[]>[];
}

interface Document {
  paths: Record<string, Record<string, RawOperation> & { parameters?: Schema[] }>;
  components: { schemas: Record<string, Schema>; parameters?: Record<string, Schema> };
}

export const document = contract as unknown as Document;

/** Follows a local `$ref` (`#/components/...`). */
export function deref(value: Schema): Schema {
  let current = value;
  for (let hops = 0; typeof current.$ref === "string"; hops++) {
    if (hops > 20) throw new Error(`reference loop at ${String(value.$ref)}`);
    const parts = (current.$ref as string).replace(/^#\//, "").split("/");
    current = parts.reduce<unknown>((node, part) => (node as Record<string, unknown>)[part], document) as Schema;
  }
  return current;
}

function parameterOf(raw: Schema): Parameter {
  const p = deref(raw);
  return { name: String(p.name), in: p.in as Parameter["in"], required: Boolean(p.required), schema: (p.schema as Schema) ?? {} };
}

export const operations: FuzzOperation[] = [...contractOperations.values()].map(({ method, path, operationId, security }) => {
  const raw = document.paths[path]![method.toLowerCase()] as RawOperation;
  const shared = document.paths[path]!.parameters ?? [];
  const content = raw.requestBody?.content ?? {};
  const types = Object.keys(content);
  return {
    operationId,
    method,
    path,
    parameters: [...shared, ...(raw.parameters ?? [])].map(parameterOf),
    body: types.length
      ? { contentType: types[0]!, alternatives: types, schema: content[types[0]!]!.schema ?? {}, required: Boolean(raw.requestBody?.required) }
      : undefined,
    scope: security?.find((requirement) => requirement.OAuth2Auth)?.OAuth2Auth?.[0],
    statuses: Object.keys(raw.responses),
  };
});

export function operationById(operationId: string): FuzzOperation {
  const found = operations.find((op) => op.operationId === operationId);
  if (!found) throw new Error(`${operationId} is not an operation of the contract`);
  return found;
}
