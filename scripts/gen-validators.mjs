// Compiles the request validators of every operation from the OpenAPI document, for `npm run gen`.
// The schemas are the ones express-openapi-validator builds at run time (its own schema
// preprocessor and parameter and body parsers, its Ajv set-up and formats), compiled here once
// to standalone code, so that the service validates exactly as before without compiling anything
// at start or looking anything up per request. Writes, into the output directory:
//   operations.json          what the router needs per operation, in the document's order
//   request-validators.js    one validator per operation for path, query and headers (coercing)
//   body-validators.js       one per operation and request media type (not coercing)
//   response-validators.js   one per operation, response status and JSON media type, and their
//                            index (`responses`), for the response check tests run
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const require = createRequire(import.meta.url);
const eov = (path) => require(`express-openapi-validator/dist/${path}`);
const { SchemaPreprocessor } = eov("middlewares/parsers/schema.preprocessor.js");
const { ParametersSchemaParser } = eov("middlewares/parsers/schema.parse.js");
const { dereferenceParameter, normalizeParameter } = eov("middlewares/parsers/util.js");
const { createRequestAjv, createResponseAjv } = eov("framework/ajv/index.js");
const standaloneCode = require("ajv/dist/standalone").default;
const { _ } = require("ajv/dist/compile/codegen");

const METHODS = ["get", "put", "post", "delete", "patch"];

// The service's validator options (server/toolkit/http/validator.ts), as express-openapi-validator
// normalises them for its request validator.
const base = {
  strict: false,
  strictNumbers: true,
  strictTuples: true,
  allowUnionTypes: false,
  validateSchema: false,
  useDefaults: true,
  removeAdditional: false,
  validateFormats: true,
  formats: { password: true },
  serDesMap: {},
  ajvFormats: { mode: "full" },
};
const requestOptions = { ...base, allErrors: true, allowUnknownQueryParameters: false, coerceTypes: false };
const code = { source: true, esm: true, formats: _`formats`, optimize: 1 };

/** `{express path, ...}` of each operation and the two validator modules, as text. */
export function compileValidators(document) {
  const apiDoc = JSON.parse(JSON.stringify(document));
  new SchemaPreprocessor(apiDoc, base, false).preProcess();
  // Coercing for path, query and headers (their values are text); the body is taken as sent.
  const general = createRequestAjv(apiDoc, { ...requestOptions, coerceTypes: true, code });
  const body = createRequestAjv(apiDoc, { ...requestOptions, code });
  // The components once, under one id that every operation's schema refers to; a schema of its own
  // per operation would repeat the whole document in the generated code for every operation.
  for (const ajv of [general, body]) ajv.addSchema({ $id: "api", components: apiDoc.components }, "api");
  const parameters = new ParametersSchemaParser(general, apiDoc);
  const operations = [];
  for (const [path, item] of Object.entries(apiDoc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const id = op.operationId;
      const expressRoute = path.replace(/\{([^}]+)\}/g, ":$1");
      const schemas = parameters.parse(expressRoute, op.parameters);
      general.addSchema(
        toShared({ required: ["query", "headers", "params"], properties: { ...schemas, body: {} } }),
        `request_${id}`,
      );
      const media = {};
      const requestBody = op.requestBody;
      for (const [type, content] of Object.entries(requestBody?.content ?? {})) {
        const schema = content.schema ?? {};
        const binary = schema.format === "binary";
        const key = `body_${id}_${Object.keys(media).length}`;
        body.addSchema(
          toShared({
            properties: { query: {}, headers: {}, params: {}, cookies: {}, body: binary ? {} : schema },
            ...(requestBody.required && !binary ? { required: ["body"] } : {}),
          }),
          key,
        );
        media[type] = key;
      }
      const query = (op.parameters ?? []).map((p) => dereferenceParameter(apiDoc, p)).filter((p) => p.in === "query");
      const querySchemas = schemas.query.properties ?? {};
      const headers = (op.parameters ?? []).map((p) => dereferenceParameter(apiDoc, p)).filter((p) => p.in === "header");
      const integers = (op.parameters ?? [])
        .map((p) => dereferenceParameter(apiDoc, p))
        .filter((p) => ["query", "path", "header"].includes(p.in) && isInteger(apiDoc, p.schema))
        .map((p) => ({ in: p.in, name: p.in === "header" ? p.name.toLowerCase() : p.name }));
      const security = (op.security ?? apiDoc.security ?? []).map((requirement) => Object.keys(requirement));
      operations.push({
        operationId: id,
        method: method.toUpperCase(),
        path,
        expressRoute,
        // The one OAuth scope the contract names for the operation; absent when credential-free.
        scope: (op.security ?? []).find((requirement) => requirement.OAuth2Auth)?.OAuth2Auth?.[0],
        idempotent: headers.some((p) => p.name.toLowerCase() === "idempotency-key"),
        ...operationMeta(id, op["x-persona"], security.some((schemes) => schemes.length === 0), method),
        // Its success response is JSON (not a stream, binary body, HTML page or redirect).
        answersJson: Object.entries(op.responses ?? {}).some(([status, response]) => status.startsWith("2") && Boolean(resolve(apiDoc, response).content?.["application/json"])),
        security,
        requestBody: requestBody ? { required: Boolean(requestBody.required), media } : null,
        multipart: Boolean(requestBody?.content?.["multipart/form-data"]),
        // Integer parameters (or arrays of them): their text must be a plain decimal integer.
        integers,
        query: {
          names: Object.keys(querySchemas),
          // Query parameters whose raw value may not hold reserved characters (no allowReserved).
          reserved: query.filter((p) => !p.allowReserved).map((p) => ({ name: p.name, allowComma: !p.explode })),
          // Parameters whose value is tried as JSON first (object or allOf/oneOf/anyOf schemas).
          json: query.filter((p) => isObjectOrXOf(normalizeParameter(general, p).schema)).map((p) => p.name),
          allowEmpty: query.filter((p) => p.allowEmptyValue).map((p) => p.name),
        },
      });
    }
  }
  const requestIds = Object.fromEntries(operations.map((op) => [`request_${op.operationId}`, `request_${op.operationId}`]));
  const bodyIds = Object.fromEntries(operations.flatMap((op) => Object.values(op.requestBody?.media ?? {}).map((key) => [key, key])));
  const responses = compileResponseValidators(document);
  return {
    ...responses,
    operations: `${JSON.stringify(operations, null, 1)}\n`,
    request: module(standaloneCode(general, requestIds)),
    requestTypes: declarations(Object.keys(requestIds)),
    body: module(standaloneCode(body, bodyIds)),
    bodyTypes: declarations(Object.keys(bodyIds)),
  };
}

/**
 * The response validators express-openapi-validator compiled when an operation first answered (its
 * response copy of the document, its response Ajv options), compiled here instead: compiling them
 * during a test took seconds of a loaded machine's event loop, long enough for a kept-alive
 * connection to be closed under a request already sent. The index names, per operation and status
 * (or `default`, `2XX`), the validator of each JSON media type; a status with no content has `{}`.
 */
function compileResponseValidators(document) {
  const apiDoc = JSON.parse(JSON.stringify(document));
  const responseOptions = { removeAdditional: false };
  const { apiDocRes } = new SchemaPreprocessor(apiDoc, base, responseOptions).preProcess();
  const ajv = createResponseAjv(apiDocRes, { ...base, allErrors: undefined, useDefaults: false, coerceTypes: undefined, removeAdditional: false, code });
  ajv.addSchema({ $id: "api", components: apiDocRes.components }, "api");
  const index = {};
  // Many responses share a schema (every operation's error envelope): one validator for each.
  const bySchema = new Map();
  for (const item of Object.values(apiDocRes.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const statuses = {};
      for (const [status, value] of Object.entries(op.responses ?? {})) {
        const response = resolve(apiDocRes, value);
        if (!response.content) {
          statuses[status] = {};
          continue;
        }
        const types = Object.keys(response.content).filter((type) => response.content[type].schema && isJson(type));
        if (!types.length) continue;
        statuses[status] = {};
        for (const type of types) {
          const schema = toShared({ type: "object", properties: { response: response.content[type].schema } });
          const text = JSON.stringify(schema);
          if (!bySchema.has(text)) {
            bySchema.set(text, `response_${bySchema.size}`);
            ajv.addSchema(schema, bySchema.get(text));
          }
          statuses[status][type] = bySchema.get(text);
        }
      }
      index[op.operationId] = statuses;
    }
  }
  const ids = [...bySchema.values()];
  return {
    response: `${module(standaloneCode(ajv, Object.fromEntries(ids.map((id) => [id, id]))))}export const responses = ${JSON.stringify(index)};\n`,
    responseTypes: `${declarations(ids)}export declare const responses: Record<string, Record<string, Record<string, string>>>;\n`,
  };
}

/** A JSON media type (`application/json`, `application/problem+json`), the only kind checked. */
function isJson(type) {
  const [, subtype = ""] = type.split(";")[0].trim().toLowerCase().split("/");
  return subtype === "json" || subtype.endsWith("+json");
}

/**
 * The operation's `x-persona` metadata (spec/lib/operation-meta.tsp), checked against what the rest
 * of the contract says: `npm run gen` fails on an operation without it, on a credential-free reason
 * that its security contradicts, on an operation with both or neither of `sdk` and `noSdk`, and on a
 * page (`page: true`) that asks for credentials or has an SDK method, and on a `replicaRead` that is
 * not a GET (a replica takes no writes).
 */
function operationMeta(id, meta, open, method) {
  const fail = (message) => {
    throw new Error(`${id}: ${message} (spec/lib/operation-meta.tsp)`);
  };
  if (!meta) fail("has no @meta");
  const reasons = ["extension", "credentialFree", "sdk", "noSdk", "replicaRead"];
  const flags = ["page"];
  for (const [key, value] of Object.entries(meta)) {
    if (flags.includes(key)) {
      if (value !== true) fail(`@meta's ${key} must be true when given`);
      continue;
    }
    if (!reasons.includes(key)) fail(`@meta has an unknown field ${key}`);
    if (typeof value !== "string" || !value.trim()) fail(`@meta's ${key} must be a non-empty string`);
  }
  if (open !== Boolean(meta.credentialFree)) {
    fail(open ? "admits an anonymous caller but @meta gives no credentialFree reason" : "requires credentials but @meta says credentialFree");
  }
  if (Boolean(meta.sdk) === Boolean(meta.noSdk)) fail("@meta needs exactly one of sdk (the method) and noSdk (why there is none)");
  // The page stages check no credential: a page must be credential-free, and no SDK calls a page.
  if (meta.page && (!meta.credentialFree || !meta.noSdk)) fail("@meta's page needs credentialFree and noSdk (a page takes no credential and has no SDK method)");
  if (meta.replicaRead && method.toUpperCase() !== "GET") fail("@meta's replicaRead is for GET operations only (a replica takes no writes)");
  return Object.fromEntries([...reasons, ...flags].filter((key) => meta[key] !== undefined).map((key) => [key, meta[key]]));
}

/** A local `$ref` followed to what it names. */
function resolve(document, value) {
  if (typeof value?.$ref !== "string") return value;
  return value.$ref.replace(/^#\//, "").split("/").reduce((node, part) => node[part.replace(/~1/g, "/").replace(/~0/g, "~")], document);
}

/** `schema` with its `#/components/...` references pointed at the shared "api" document. */
function toShared(schema) {
  return JSON.parse(JSON.stringify(schema), (key, value) => (key === "$ref" && typeof value === "string" && value.startsWith("#/") ? `api${value}` : value));
}

/** An integer schema, or an array of integers (through references and a one-member allOf). */
function isInteger(document, schema) {
  const resolved = resolve(document, schema ?? {});
  if (resolved.allOf?.length === 1) return isInteger(document, resolved.allOf[0]);
  if (resolved.type === "array") return isInteger(document, resolved.items);
  return resolved.type === "integer";
}

function isObjectOrXOf(schema) {
  if (!schema) return false;
  if (schema.$ref) return true;
  const { type, allOf, oneOf, anyOf } = schema;
  return type === "object" || [].concat(allOf, oneOf, anyOf).some(isObjectOrXOf);
}

/** Ajv's standalone code as an ES module of this package: its runtime helpers and the formats. */
function module(source) {
  return [
    "// Generated by scripts/gen-validators.mjs from generated/openapi.yaml (`npm run gen`). Do not edit.",
    "/* eslint-disable */",
    'import { createRequire } from "node:module";',
    "const require = createRequire(import.meta.url);",
    "// express-openapi-validator's formats, then ajv-formats' full set over them, as its Ajv has them.",
    'const formats = { ...require("express-openapi-validator/dist/framework/ajv/formats.js").formats, ...require("ajv-formats/dist/formats").fullFormats, password: true };',
    source.replace(/^"use strict";/, ""),
    "",
  ].join("\n");
}

/** The modules' exports, typed: each an Ajv validate function. */
function declarations(names) {
  return [
    "// Generated by scripts/gen-validators.mjs (`npm run gen`). Do not edit.",
    "export interface CompiledValidator {",
    "  (data: unknown): boolean;",
    "  errors?: { keyword: string; instancePath: string; schemaPath: string; params: Record<string, unknown>; message?: string }[] | null;",
    "}",
    ...names.map((name) => `export declare const ${name}: CompiledValidator;`),
    "",
  ].join("\n");
}

/** The files `npm run gen` writes and `npm run check` compares. */
export const VALIDATOR_FILES = ["operations.json", "request-validators.js", "request-validators.d.ts", "body-validators.js", "body-validators.d.ts", "response-validators.js", "response-validators.d.ts"];

export function writeValidators(document, outDir) {
  const compiled = compileValidators(document);
  writeFileSync(join(outDir, "operations.json"), compiled.operations);
  writeFileSync(join(outDir, "request-validators.js"), compiled.request);
  writeFileSync(join(outDir, "request-validators.d.ts"), compiled.requestTypes);
  writeFileSync(join(outDir, "body-validators.js"), compiled.body);
  writeFileSync(join(outDir, "body-validators.d.ts"), compiled.bodyTypes);
  writeFileSync(join(outDir, "response-validators.js"), compiled.response);
  writeFileSync(join(outDir, "response-validators.d.ts"), compiled.responseTypes);
}
