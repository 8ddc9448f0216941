import { readFileSync } from "node:fs";
import { resolve } from "node:path";
export const root = resolve(import.meta.dirname, "..", "..");

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"] as const;

export interface ContractOperation {
  method: string;
  path: string;
  operationId: string;
  security: Record<string, string[]>[] | undefined;
}

interface OpenApiDocument {
  paths: Record<string, Record<string, { operationId: string; security?: Record<string, string[]>[] }>>;
}

/** generated/openapi.json: the same document as openapi.yaml, parsed in milliseconds instead of a second. */
export function loadContract(): OpenApiDocument {
  return JSON.parse(readFileSync(resolve(root, "generated", "openapi.json"), "utf8")) as OpenApiDocument;
}

export function contractOperations(doc = loadContract()): ContractOperation[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({
      method: method.toUpperCase(),
      path,
      operationId: item[method]!.operationId,
      security: item[method]!.security,
    })),
  );
}

/** `METHOD /v1/x/:id` lines -> `METHOD /v1/x/{id}`. */
export function readEndpointList(file: string): string[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => line.replace(/:([a-z_]+)/g, "{$1}"));
}

/** The rows of the "Endpoints beyond the specification" table in docs/decisions.md. */
export function documentedExtensions(): { method: string; path: string; operationId: string }[] {
  const text = readFileSync(resolve(root, "docs", "decisions.md"), "utf8");
  const section = text.split(/^## /m).find((part) => part.startsWith("Endpoints beyond the specification"));
  if (!section) throw new Error("docs/decisions.md has no 'Endpoints beyond the specification' section");
  return section
    .split("\n")
    .filter((line) => /^\|\s*(GET|POST|PUT|DELETE|PATCH)\s*\|/.test(line))
    .map((line) => {
      const [method, path, operationId] = line.split("|").slice(1, 4).map((cell) => cell.trim().replace(/`/g, ""));
      return { method: method!, path: path!, operationId: operationId! };
    });
}
