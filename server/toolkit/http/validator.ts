import type { Request, RequestHandler } from "express";
import { parse as parseQuery } from "qs";
import * as bodyValidators from "../../../generated/body-validators.js";
import type { CompiledValidator } from "../../../generated/request-validators.js";
import * as requestValidators from "../../../generated/request-validators.js";
import type { OperationInfo } from "../contract.ts";
import { unauthorized, unsupportedMediaType, validationFailed, type FieldError } from "./error-catalogue.ts";
import { refuseIllFormedText, refuseMalformedUrlOrMissingBody } from "./well-formed.ts";

type AjvError = NonNullable<CompiledValidator["errors"]>[number];
// One validator per operation (path, query, headers) and per operation and media type (body).
const compiled = { ...(requestValidators as Record<string, CompiledValidator>), ...(bodyValidators as Record<string, CompiledValidator>) };

type WithOpenapi = Request & { openapi?: { schema: { operationId: string; requestBody?: { required: boolean } }; pathParams: Record<string, string>; expressRoute: string } };

/**
 * The contract's checks for one operation, as the stages of its Express route after
 * `identifyOperation`, in two parts around the body's reading (issue 31: the caller is known before
 * the service reads a body). `requestValidation`: the raw URL and a required body, and that a
 * credential of a declared kind is present (whether it is valid is the auth area's job; the app
 * resolved it before the route). `bodyValidation`, once the body is read:
 * the shared text checks, then path, query, headers and body against the validators `npm run gen`
 * compiled from the contract. The checks, their order and every error are those of
 * express-openapi-validator, which did the same work per request with a route lookup, a schema
 * walk and validators compiled at start (responses, in tests: response-validator.ts).
 */
export function requestValidation(op: OperationInfo): RequestHandler[] {
  const stages: RequestHandler[] = [refuseMalformedUrlOrMissingBody];
  if (!op.security.some((requirement) => requirement.length === 0)) stages.push(credentialPresent(op));
  return stages;
}

export function bodyValidation(op: OperationInfo): RequestHandler[] {
  return [refuseIllFormedText, validate(op)];
}

/** Names the request's operation (`req.openapi`), the first stage of its route. */
export function identifyOperation(op: OperationInfo): RequestHandler {
  const schema = { operationId: op.operationId, ...(op.requestBody ? { requestBody: { required: op.requestBody.required } } : {}) };
  return (req: WithOpenapi, _res, next) => {
    req.openapi ??= { schema, pathParams: req.params as Record<string, string>, expressRoute: op.expressRoute };
    next();
  };
}

const hasBearer = (req: Request) => {
  const header = req.headers.authorization;
  return typeof header === "string" && /^Bearer \S+$/i.test(header);
};
const schemes: Record<string, (req: Request) => boolean> = {
  BearerAuth: hasBearer,
  OAuth2Auth: hasBearer,
  ApiKeyAuth: (req) => Boolean(req.headers["x-api-key"]),
};

function credentialPresent(op: OperationInfo): RequestHandler {
  const requirements = op.security.map((names) => names.map((name) => schemes[name] ?? (() => false)));
  return (req, _res, next) => {
    if (requirements.some((checks) => checks.every((check) => check(req)))) return next();
    next(unauthorized("Credentials are missing or invalid"));
  };
}

const RESERVED_CHARS = /[:/?#[\]@!$&'()*+,;=]/;

function validate(op: OperationInfo): RequestHandler {
  const general = compiled[`request_${op.operationId}`];
  if (!general) throw new Error(`No compiled validator for ${op.operationId}: run npm run gen`);
  const known = new Set(op.query.names);
  const allowEmpty = new Set(op.query.allowEmpty);
  const bodies = Object.entries(op.requestBody?.media ?? {}).map(([type, key]) => ({ type, validator: compiled[key]! }));
  return (req, _res, next) => {
    const body = op.requestBody ? bodyValidator(req, op.requestBody.required, bodies) : undefined;
    // Express parses the query anew on every read of req.query: keep one object, which the
    // validator coerces and fills with defaults for the handler.
    const query = queryOf(req);
    const raw = op.query.reserved.length ? rawQuery(req.originalUrl) : undefined;
    for (const { name, allowComma } of op.query.reserved) {
      for (const value of raw?.get(name) ?? []) {
        for (const part of allowComma ? (value?.split(",") ?? []) : [value]) {
          if (part?.match(RESERVED_CHARS)) return next(refused(`/query/${name}`, `Parameter '${name}' must be url encoded. Its value may not contain reserved characters.`));
        }
      }
    }
    for (const name of op.query.json) {
      if (!query[name]) continue;
      try {
        query[name] = JSON.parse(query[name] as string) as unknown;
      } catch {
        // not JSON: the string is checked as it is
      }
    }
    for (const name of Object.keys(query)) {
      if (!known.has(name)) return next(refused(`/query/${name}`, `Unknown query parameter '${name}'`));
      if (!allowEmpty.has(name) && query[name] === "") return next(refused(`/query/${name}`, `Empty value found for query parameter '${name}'`));
    }
    if (op.multipart && req.headers["content-type"]?.includes("multipart/form-data")) {
      req.body ??= {};
    }
    const data = { query, headers: req.headers, params: req.params, cookies: undefined, body: req.body as unknown };
    // Read before the validator coerces them to numbers.
    const integers = integerTexts(op, data);
    const valid = general(data);
    const validBody = body ? body(data) : true;
    const generalErrors = (general.errors ?? []).map(fieldError);
    const notDecimal = notPlainIntegers(integers, valid ? [] : generalErrors);
    if (valid && validBody && !notDecimal.length) return next();
    const errors = [...(valid ? [] : generalErrors), ...notDecimal, ...((body && body.errors) ?? []).map(fieldError)];
    next(validationFailed(errors));
  };
}

const SOURCE = { query: "query", path: "params", header: "headers" } as const;
const PLAIN_INTEGER = /^-?\d+$/;

/** The raw text of each integer parameter present, by the path its errors name. */
function integerTexts(op: OperationInfo, data: Record<"query" | "params" | "headers", unknown>): [string, unknown][] {
  return op.integers.flatMap(({ in: location, name }) => {
    const value = (data[SOURCE[location]] as Record<string, unknown>)[name];
    return value === undefined ? [] : [[`/${SOURCE[location]}/${name}`, value] as [string, unknown]];
  });
}

/**
 * Integers written otherwise than in plain decimal (`0x10`, `1e2`, `+5`, `1.0`, ` 7`), which the
 * validator's coercion (`Number()`) would take; a field the validator already refused is not
 * named twice. Ajv's own message, so the answer reads like any other type error.
 */
function notPlainIntegers(texts: [string, unknown][], already: FieldError[]): FieldError[] {
  const named = new Set(already.map((error) => error.path.replace(/\/\d+$/, "")));
  return texts
    .filter(([path, value]) => !named.has(path) && [value].flat().some((item) => typeof item === "string" && !PLAIN_INTEGER.test(item)))
    .map(([path]) => ({ path, message: "must be integer" }));
}

function queryOf(req: Request): Record<string, unknown> {
  const query = req.query as Record<string, unknown>;
  Object.defineProperty(req, "query", { value: query, writable: true, configurable: true, enumerable: true });
  // A key with brackets (`a[b]=1`) is a nested object, as qs reads it.
  for (const key of Object.keys(query)) {
    if (!key.includes("[")) continue;
    const name = key.split("[")[0]!;
    const parsed = parseQuery(`${key}=${String(query[key])}`)[name];
    if (parsed !== undefined) {
      const current = query[name];
      query[name] = current && typeof current === "object" && typeof parsed === "object" && !Array.isArray(parsed) ? { ...current, ...parsed } : parsed;
    }
    delete query[key];
  }
  return query;
}

/** The raw (undecoded) values of each query key, as `a=b` pairs split on `&` and `=`. */
function rawQuery(url: string): Map<string, (string | undefined)[]> {
  const map = new Map<string, (string | undefined)[]>();
  const start = url.indexOf("?");
  if (start < 0) return map;
  const end = url.indexOf("#", start);
  const query = url.slice(start + 1, end < 0 ? undefined : end);
  if (!query) return map;
  for (const pair of query.split("&")) {
    const [key = "", value] = pair.split("=");
    const values = map.get(key) ?? [];
    values.push(value);
    map.set(key, values);
  }
  return map;
}

/** The body's validator for the request's media type; 415 for a type the operation does not take. */
function bodyValidator(req: Request, required: boolean, bodies: { type: string; validator: CompiledValidator }[]): CompiledValidator | undefined {
  const header = req.headers["content-type"];
  const mediaType = header?.split(";")[0]!.toLowerCase().trim();
  const found = mediaType ? bodies.find(({ type }) => type === mediaType) : undefined;
  if (found) return found.validator;
  if (!mediaType && !required) return undefined;
  throw unsupportedMediaType(`unsupported media type ${normalizedContentType(header)}`);
}

/** A content type as the contract validator named it in its 415: lower-cased type, sorted parameters, no boundary. */
export function normalizedContentType(header: string | undefined): string {
  if (!header) return "undefined";
  // Split on ';' and the first '=' of each part, one pass over the header: the regular expression
  // this replaces backtracked over a run of '; ; ;' in quadratic time (issue 31 M2).
  const parameters: Record<string, string> = {};
  for (const part of header.split(";").slice(1)) {
    const equals = part.indexOf("=");
    if (equals <= 0) continue;
    const name = part.slice(0, equals).trimStart();
    const value = part.slice(equals + 1);
    if (!name || !value) continue;
    const key = name.toLowerCase();
    parameters[key] = key === "charset" ? value.toLowerCase() : value;
  }
  const rest = Object.keys(parameters)
    .sort()
    .filter((key) => key !== "boundary")
    .map((key) => `; ${key}=${parameters[key]}`)
    .join("");
  return `${header.split(";")[0]!.toLowerCase().trim()}${rest}`;
}

/** An Ajv error as the contract validator reported it: the field's path and Ajv's message. */
function fieldError(error: AjvError): FieldError {
  const { params } = error;
  let message = error.message ?? "";
  if (error.keyword === "enum" && Array.isArray(params.allowedValues)) message = `${message}: ${params.allowedValues.join(", ")}`;
  const named = (params.missingProperty ?? params.additionalProperty ?? params.unevaluatedProperty) as string | undefined;
  return { path: named !== undefined ? `${error.instancePath}/${named}` : error.instancePath, message };
}

const refused = (path: string, message: string) => validationFailed([{ path, message }]);
