import { createRequire } from "node:module";
import type { Request, RequestHandler } from "express";
import type { CompiledValidator } from "../../../generated/response-validators.js";
import type { Config } from "../config.ts";

type Index = Record<string, Record<string, Record<string, string>>>;
type ValidatorError = { path: string; message?: string; errorCode: string };
type Util = {
  findResponseContent(accepts: string[], types: string[]): string | undefined;
  augmentAjvErrors(errors: NonNullable<CompiledValidator["errors"]>): NonNullable<CompiledValidator["errors"]>;
  ajvErrorsToValidatorError(status: number, errors: NonNullable<CompiledValidator["errors"]>): { errors: ValidatorError[] };
};

/**
 * In tests (`VALIDATE_RESPONSES`), every JSON response is checked against the contract; a mismatch
 * becomes a 500 naming the fields (`toApiError`). The check is express-openapi-validator's
 * response check with the validators `npm run gen` compiled ahead (generated/response-validators.js):
 * the same choice of schema by status (exact, then `4XX`, then `default`) and media type, the same
 * errors. Compiling them when an operation first answered, as that library does, held a loaded
 * machine's event loop for seconds, long enough for a kept-alive connection to be closed under a
 * request already on its way (issue 33). Loaded only when asked for.
 */
export async function responseValidator(config: Pick<Config, "validateResponses">): Promise<RequestHandler[]> {
  if (!config.validateResponses) return [];
  const validators = (await import("../../../generated/response-validators.js")) as unknown as Record<string, CompiledValidator> & { responses: Index };
  const util = createRequire(import.meta.url)("express-openapi-validator/dist/middlewares/util.js") as Util;
  return [checkResponses(validators, util)];
}

function checkResponses(validators: Record<string, CompiledValidator> & { responses: Index }, util: Util): RequestHandler {
  return (req, res, next) => {
    const original = res.json;
    res.json = function checked(body: unknown) {
      res.json = original;
      if (res.headersSent || res.statusCode >= 500) return original.call(this, body);
      const operationId = (req as Request & { openapi?: { schema?: { operationId?: string } } }).openapi?.schema?.operationId;
      const statuses = operationId ? validators.responses[operationId] : undefined;
      if (!statuses) return original.call(this, body);
      const failure = mismatch(statuses, body, res.statusCode, contentTypes(req, res.getHeader("content-type")), validators, util, req.originalUrl);
      if (failure) {
        next(failure);
        return res;
      }
      return original.call(this, body);
    };
    next();
  };
}

/** The response's media type, or else what the request accepts, to pick the schema by. */
function contentTypes(req: Request, header: unknown): string[] {
  if (header) return [String(header)];
  return req.headers.accept ? req.headers.accept.split(",").map((type) => type.trim()) : [];
}

const failed = (path: string, message: string, errors: ValidatorError[] = [{ path, message, errorCode: "response.openapi.validation" }]) => ({ status: 500, path, message, errors });

function mismatch(statuses: Index[string], body: unknown, status: number, accepts: string[], validators: Record<string, CompiledValidator>, util: Util, path: string) {
  const types = statuses[String(status)] ?? statuses[`${String(status)[0]}XX`] ?? statuses.default;
  if (!types) return failed(path, `no schema defined for status code '${status}' in the openapi spec`);
  const names = Object.keys(types);
  if (!names.length) return body === undefined ? undefined : failed("/response", "response should NOT have a body");
  const type = util.findResponseContent(accepts, names) ?? names[0]!;
  const validator = types[type] ? validators[types[type]] : undefined;
  if (!validator) return undefined;
  if (body === undefined || body === null) return failed("/response", "response body required.");
  if (validator({ response: body })) return undefined;
  const { errors } = util.ajvErrorsToValidatorError(500, util.augmentAjvErrors(validator.errors ?? []));
  return failed(path, errors.map((error) => `${error.path} ${error.message ?? ""}`).join(", "), errors);
}
