import type { RequestHandler } from "express";
import * as OpenApiValidator from "express-openapi-validator";
import type { Config } from "../config.ts";
import { contract } from "../contract.ts";

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
  return OpenApiValidator.middleware({
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
    fileUploader: { limits: { fileSize: MAX_UPLOAD_BYTES, files: 1 } },
    ignoreUndocumented: false,
  }) as RequestHandler[];
}
