import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import YAML from "yaml";

export const root = resolve(import.meta.dirname, "..", "..");

export type JsonSchema = Record<string, unknown>;

interface MediaType {
  schema?: JsonSchema;
}

export interface ResponseSpec {
  content?: Record<string, MediaType>;
  headers?: Record<string, unknown>;
  $ref?: string;
}

interface OperationSpec {
  operationId: string;
  responses: Record<string, ResponseSpec>;
  requestBody?: { content: Record<string, MediaType & { example?: unknown }> };
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, OperationSpec>>;
  components: { schemas: Record<string, JsonSchema>; responses: Record<string, ResponseSpec> };
}

export interface Operation {
  operationId: string;
  method: string;
  path: string;
  /** Declared responses by status, with component references resolved. */
  responses: Record<string, ResponseSpec>;
}

const METHODS = new Set(["get", "put", "post", "delete", "patch", "head", "options"]);

export const contract = YAML.parse(readFileSync(resolve(root, "generated", "openapi.yaml"), "utf8")) as OpenApiDocument;

function resolveResponse(response: ResponseSpec): ResponseSpec {
  if (!response.$ref) return response;
  const name = response.$ref.split("/").pop()!;
  const target = contract.components.responses[name];
  if (!target) throw new Error(`the contract references a missing response ${response.$ref}`);
  return target;
}

export const operations: ReadonlyMap<string, Operation> = new Map(
  Object.entries(contract.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, spec]): [string, Operation] => [
        spec.operationId,
        {
          operationId: spec.operationId,
          method: method.toUpperCase(),
          path,
          responses: Object.fromEntries(Object.entries(spec.responses).map(([status, r]) => [status, resolveResponse(r)])),
        },
      ]),
  ),
);

export function operation(operationId: string): Operation {
  const found = operations.get(operationId);
  if (!found) throw new Error(`${operationId} is not an operation of the contract`);
  return found;
}
