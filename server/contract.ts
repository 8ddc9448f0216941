import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import YAML from "yaml";
import type { OpenAPIV3 } from "express-openapi-validator/dist/framework/types.js";

export const contractPath = fileURLToPath(new URL("../generated/openapi.yaml", import.meta.url));

/** The generated OpenAPI document, parsed once per process. */
export const contract = YAML.parse(readFileSync(contractPath, "utf8")) as OpenAPIV3.DocumentV3;

const METHODS = ["get", "put", "post", "delete", "patch"] as const;

export interface OperationInfo {
  operationId: string;
  method: string;
  path: string;
  /** The OAuth scope the contract names for the operation; undefined when credential-free. */
  scope: string | undefined;
  /** Declares an `Idempotency-Key` header. */
  idempotent: boolean;
  /** Its success response is JSON (false for streams, binary bodies, HTML and redirects). */
  answersJson: boolean;
}

/** Follows a local `$ref` (`#/components/...`) to what it names. */
export function resolveRef<T>(value: T | OpenAPIV3.ReferenceObject): T {
  const ref = (value as OpenAPIV3.ReferenceObject).$ref;
  if (typeof ref !== "string") return value as T;
  const parts = ref.replace(/^#\//, "").split("/").map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"));
  return parts.reduce<unknown>((node, part) => (node as Record<string, unknown>)[part], contract) as T;
}

export const operations: OperationInfo[] = Object.entries(contract.paths).flatMap(([path, item]) =>
  METHODS.filter((method) => item?.[method]).map((method) => {
    const op = item![method]!;
    const scopes = op.security?.find((requirement) => requirement.OAuth2Auth)?.OAuth2Auth;
    // Shared parameters (such as Idempotency-Key) are declared once and referenced.
    const parameters = [...(item!.parameters ?? []), ...(op.parameters ?? [])].map((parameter) =>
      resolveRef<OpenAPIV3.ParameterObject>(parameter),
    );
    return {
      operationId: op.operationId!,
      method: method.toUpperCase(),
      path,
      scope: scopes?.[0],
      idempotent: parameters.some((parameter) => parameter.in === "header" && parameter.name.toLowerCase() === "idempotency-key"),
      answersJson: Object.entries(op.responses ?? {}).some(
        ([status, response]) => status.startsWith("2") && Boolean(resolveRef<OpenAPIV3.ResponseObject>(response).content?.["application/json"]),
      ),
    };
  }),
);

export const operationsById = new Map(operations.map((op) => [op.operationId, op]));
