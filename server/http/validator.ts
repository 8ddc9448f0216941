import type { RequestHandler } from "express";
import * as OpenApiValidator from "express-openapi-validator";
import type { Config } from "../config.ts";
import { contract } from "../contract.ts";
import { ApiError } from "./errors.ts";
import { refuseIllFormedText, refuseMalformedUrlOrMissingBody } from "./well-formed.ts";

/** Largest multipart upload of any operation (speech-to-text audio); each area checks its own limit. */
export const MAX_UPLOAD_BYTES = 25 * 1024 * 1024;

/**
 * Checks every request against generated/openapi.yaml: path, query, headers, JSON and form bodies,
 * multipart parts, content type, and that a credential of a declared kind is present. Whether the
 * credential is valid is the auth middleware's job. With `validateResponses`, every JSON response
 * is checked too, and a mismatch becomes a 500.
 */
function hasBearer(req: { headers: Record<string, string | string[] | undefined> }): boolean {
  const header = req.headers.authorization;
  return typeof header === "string" && /^Bearer \S+$/i.test(header);
}

export function contractValidator(config: Pick<Config, "validateResponses">): RequestHandler[] {
  const stages = OpenApiValidator.middleware({
    apiSpec: structuredClone(contract),
    // allErrors: a client fixing a form wants every bad field at once, not one per round trip.
    validateRequests: { allowUnknownQueryParameters: false, coerceTypes: false, allErrors: true },
    validateResponses: config.validateResponses ? { removeAdditional: false } : false,
    validateSecurity: {
      handlers: {
        BearerAuth: async (req) => hasBearer(req),
        ApiKeyAuth: async (req) => Boolean(req.headers["x-api-key"]),
        OAuth2Auth: async (req) => hasBearer(req),
      },
    },
    validateFormats: true,
    ajvFormats: { mode: "full" },
    formats: { password: () => true },
    // File names in part headers are UTF-8 (RFC 7578 4.2; what browsers send), not busboy's latin1.
    fileUploader: { limits: { fileSize: MAX_UPLOAD_BYTES, files: 1 }, defParamCharset: "utf8" },
    ignoreUndocumented: false,
  }) as RequestHandler[];
  // The validator's stages by name: the shared text checks go between them, once the operation is
  // known and every body is parsed, and before the contract's own checks.
  const named = (name: string) => {
    const stage = stages.find((fn) => fn.name === name);
    if (!stage) throw new Error(`express-openapi-validator has no ${name} stage`);
    return stage;
  };
  const known = new Set(["pathParamsMiddleware", "metadataMiddleware", "securityMiddleware", "multipartMiddleware", "requestMiddleware", "responseMiddleware"]);
  const unknown = stages.filter((fn) => !known.has(fn.name));
  if (unknown.length) throw new Error(`express-openapi-validator has stages this service does not place: ${unknown.map((fn) => fn.name).join(", ")}`);
  return [
    named("pathParamsMiddleware"),
    named("metadataMiddleware"),
    refuseMalformedUrlOrMissingBody,
    named("securityMiddleware"),
    malformedMultipartIsBadRequest(named("multipartMiddleware")),
    refuseIllFormedText,
    named("requestMiddleware"),
    ...(config.validateResponses ? [named("responseMiddleware")] : []),
  ];
}

/**
 * The validator reports a multipart body that its parser cannot read (a malformed part header, a
 * body cut off mid-part, a file in an undeclared field) as a 500; it is the client's bad request.
 */
function malformedMultipartIsBadRequest(stage: RequestHandler): RequestHandler {
  return (req, res, next) =>
    stage(req, res, (error?: unknown) => {
      const status = (error as { status?: number } | undefined)?.status;
      if (error && (status === undefined || status >= 500)) {
        const reason = (error as Error).message || "unreadable";
        return next(new ApiError(400, "invalid_request", `The multipart body is malformed: ${reason}`, { errors: [{ path: "/body", message: reason }] }));
      }
      next(error as Error | undefined);
    });
}
