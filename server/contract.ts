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
}

export const operations: OperationInfo[] = Object.entries(contract.paths).flatMap(([path, item]) =>
  METHODS.filter((method) => item?.[method]).map((method) => {
    const op = item![method]!;
    const scopes = op.security?.find((requirement) => requirement.OAuth2Auth)?.OAuth2Auth;
    const parameters = (op.parameters ?? []) as OpenAPIV3.ParameterObject[];
    return {
      operationId: op.operationId!,
      method: method.toUpperCase(),
      path,
      scope: scopes?.[0],
      idempotent: parameters.some((parameter) => parameter.in === "header" && parameter.name.toLowerCase() === "idempotency-key"),
    };
  }),
);

export const operationsById = new Map(operations.map((op) => [op.operationId, op]));
