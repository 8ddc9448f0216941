import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import YAML from "yaml";

// The contract as the tests and the conformance suite read it: generated/openapi.yaml, parsed once.

export const root = resolve(import.meta.dirname, "..", "..");

export type JsonSchema = Record<string, unknown>;

interface MediaType {
  schema?: JsonSchema;
  example?: unknown;
  examples?: Record<string, { value?: unknown }>;
}

export interface ResponseSpec {
  content?: Record<string, MediaType>;
  headers?: Record<string, unknown>;
  $ref?: string;
}

export interface ParameterSpec {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  schema?: JsonSchema;
  example?: unknown;
  $ref?: string;
}

type SecurityRequirement = Record<string, string[]>;

interface OperationSpec {
  operationId: string;
  parameters?: ParameterSpec[];
  security?: SecurityRequirement[];
  responses: Record<string, ResponseSpec>;
  requestBody?: { content: Record<string, MediaType> };
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, OperationSpec>>;
  components: {
    schemas: Record<string, JsonSchema>;
    responses: Record<string, ResponseSpec>;
    parameters?: Record<string, ParameterSpec>;
  };
}

export interface Operation {
  operationId: string;
  method: string;
  path: string;
  security: SecurityRequirement[] | undefined;
  /** Declared parameters, with component references resolved. */
  parameters: ParameterSpec[];
  requestBody: OperationSpec["requestBody"];
  /** Declared responses by status, with component references resolved. */
  responses: Record<string, ResponseSpec>;
}

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"] as const;

export const contract = YAML.parse(readFileSync(resolve(root, "generated", "openapi.yaml"), "utf8")) as OpenApiDocument;

function component<T>(kind: Record<string, T> | undefined, ref: string): T {
  const found = kind?.[ref.split("/").pop()!];
  if (!found) throw new Error(`the contract references a missing component ${ref}`);
  return found;
}

const resolveResponse = (r: ResponseSpec) => (r.$ref ? component(contract.components.responses, r.$ref) : r);
const resolveParameter = (p: ParameterSpec) => (p.$ref ? component(contract.components.parameters, p.$ref) : p);

/** Every operation of the contract by operationId, in document order. */
export const operations: ReadonlyMap<string, Operation> = new Map(
  Object.entries(contract.paths).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method): [string, Operation] => {
      const spec = item[method]!;
      return [
        spec.operationId,
        {
          operationId: spec.operationId,
          method: method.toUpperCase(),
          path,
          security: spec.security,
          parameters: (spec.parameters ?? []).map(resolveParameter),
          requestBody: spec.requestBody,
          responses: Object.fromEntries(Object.entries(spec.responses).map(([status, r]) => [status, resolveResponse(r)])),
        },
      ];
    }),
  ),
);

export function operation(operationId: string): Operation {
  const found = operations.get(operationId);
  if (!found) throw new Error(`${operationId} is not an operation of the contract`);
  return found;
}

/** `METHOD /v1/x/:id` lines -> `METHOD /v1/x/{id}`. */
export function readEndpointList(file: string): string[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => line.replace(/:([a-z_]+)/g, "{$1}"));
}
