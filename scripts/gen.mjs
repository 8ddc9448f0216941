#!/usr/bin/env node
// Builds generated/ from spec/: TypeSpec -> OpenAPI 3.0.3 (YAML, and the same document as JSON for
// readers that start often: `persona api` parses JSON in milliseconds, this YAML in about a second)
// -> TypeScript types and compiled validators; then, when writing generated/, the docs generated from
// the contract (docs/scopes.md, docs/extensions.md, the README's operation counts) and the SDK's
// operation methods (sdk/src/generated/, scripts/gen-sdk.ts).
// Usage: node scripts/gen.mjs [outDir]   (default: generated/). `npm run check` builds into a temp dir
// and compares, so a stale generated/ fails the check.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { isDeepStrictEqual } from "node:util";
import YAML from "yaml";
import { writeValidators } from "./gen-validators.mjs";

const root = resolve(import.meta.dirname, "..");
const outDir = resolve(process.argv[2] ?? join(root, "generated"));
const bin = (name) => join(root, "node_modules", ".bin", name);
// The tools' shebangs say `env node`: put the project's pinned Node 24 first, as `npm run` does.
const env = { ...process.env, PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH}` };

const work = mkdtempSync(join(tmpdir(), "persona-gen-"));
try {
  execFileSync(
    bin("tsp"),
    ["compile", join(root, "spec"), "--warn-as-error", "--option", `@typespec/openapi3.emitter-output-dir=${work}`],
    { cwd: root, env, stdio: ["ignore", "ignore", "inherit"] },
  );
  const doc = YAML.parse(readFileSync(join(work, "openapi.yaml"), "utf8"));
  normalize(doc);
  mkdirSync(outDir, { recursive: true });
  const yamlPath = join(outDir, "openapi.yaml");
  writeFileSync(yamlPath, toYaml(doc));
  writeFileSync(join(outDir, "openapi.json"), `${JSON.stringify(doc, null, 1)}\n`);
  // Request validators compiled from the document (scripts/gen-validators.mjs).
  writeValidators(YAML.parse(readFileSync(yamlPath, "utf8")), outDir);
  execFileSync(bin("openapi-typescript"), [yamlPath, "--output", join(outDir, "openapi.d.ts"), "--root-types", "--default-non-nullable", "false"], {
    cwd: root,
    env,
    stdio: ["ignore", "ignore", "inherit"],
  });
} finally {
  rmSync(work, { recursive: true, force: true });
}
// The docs generated from the contract, when generated/ itself was written: the scope table
// (scripts/scope-table.ts), the extensions and the README's operation counts (scripts/operation-docs.ts);
// and the SDK's methods.
if (outDir === join(root, "generated")) {
  const scopes = execFileSync(process.execPath, [join(root, "scripts", "scope-table.ts")], { cwd: root, env, encoding: "utf8" });
  writeFileSync(join(root, "docs", "scopes.md"), scopes);
  execFileSync(process.execPath, [join(root, "scripts", "operation-docs.ts")], { cwd: root, env, stdio: ["ignore", "inherit", "inherit"] });
  // The SDK's operation methods (sdk/src/generated/) and its README's table of them (scripts/gen-sdk.ts).
  execFileSync(process.execPath, [join(root, "scripts", "gen-sdk.ts")], { cwd: root, env, stdio: ["ignore", "inherit", "inherit"] });
  execFileSync(process.execPath, [join(root, "scripts", "settings-table.ts"), "--write"], { cwd: root, env, stdio: ["ignore", "inherit", "inherit"] });
  execFileSync(process.execPath, [join(root, "scripts", "adr-index.ts")], { cwd: root, env, stdio: ["ignore", "inherit", "inherit"] });
}

/**
 * Structural clean-ups the emitter cannot express. None changes what the document means:
 * - the emitter writes `openapi: 3.0.0`; the project targets 3.0.3 (same schema, later errata);
 * - every response repeats the three rate-limit headers and every error response is identical per
 *   status, so both are hoisted into `components` and referenced, which keeps the document readable;
 * - `HttpsUrl | null` comes out as `allOf: [$ref HttpsUrl]` + `nullable: true`, which OpenAPI 3.0
 *   validators read as "never null" (the referenced scalar is not nullable), so such a named scalar is
 *   inlined next to `nullable: true` (an enum with null added to its values);
 * - free-text string query parameters (search `q`, OAuth `scope`, `state`, `redirect_uri`, ...) get
 *   `allowReserved: true`: validators otherwise refuse `+` (a form-encoded space), `(`, `'` and the
 *   like in the raw query, although clients (URLSearchParams, encodeURIComponent) send them so.
 */
/**
 * Path parameters get their examples from the operations' @opExample (the emitter's
 * experimental-parameter-examples). An operation whose example cannot be written in TypeSpec (a
 * multipart upload: no value syntax for file bytes) takes the example of the same parameter of
 * another operation on the same path, so that every path parameter has one (contract testers such
 * as Dredd build requests from them, and read only the single `example`: an operation with several
 * @opExample gets an `examples` map, which becomes the first one's value).
 */
function shareSiblingPathExamples(doc) {
  for (const pathItem of Object.values(doc.paths ?? {})) {
    const known = {};
    const ops = Object.values(pathItem).filter((op) => op && typeof op === "object" && Array.isArray(op.parameters));
    for (const op of ops) {
      for (const p of op.parameters) {
        if (p.in !== "path" || !p.examples) continue;
        p.example = Object.values(p.examples)[0]?.value;
        delete p.examples;
      }
    }
    for (const op of ops) for (const p of op.parameters) if (p.in === "path" && p.example !== undefined) known[p.name] ??= p.example;
    for (const op of ops) for (const p of op.parameters) if (p.in === "path" && p.example === undefined && p.name in known) p.example = known[p.name];
  }
}

function normalize(doc) {
  doc.openapi = "3.0.3";
  inlineNullableScalars(doc, doc.components?.schemas ?? {});
  allowReservedInFreeText(doc);
  shareSiblingPathExamples(doc);
  const components = (doc.components ??= {});
  const headers = {};
  const responses = {};
  const errorNames = {
    400: "BadRequest", 401: "Unauthorized", 402: "PaymentRequired", 403: "Forbidden", 404: "NotFound",
    409: "Conflict", 413: "PayloadTooLarge", 415: "UnsupportedMediaType", 429: "TooManyRequests",
    500: "InternalError", 501: "NotImplemented", 502: "UpstreamError", 503: "ServiceUnavailable",
  };
  for (const pathItem of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(pathItem)) {
      if (!op || typeof op !== "object" || !op.responses) continue;
      for (const [status, response] of Object.entries(op.responses)) {
        for (const [name, header] of Object.entries(response.headers ?? {})) {
          if (!name.startsWith("X-RateLimit-") && name !== "Retry-After") continue;
          headers[name] ??= header;
          if (isDeepStrictEqual(headers[name], header)) response.headers[name] = { $ref: `#/components/headers/${name}` };
        }
        const name = errorNames[status];
        // Error bodies: `Error`, or a status's own schema of the same shape (its example names its code).
        const ref = response.content?.["application/json"]?.schema?.$ref ?? "";
        if (!name || !/^#\/components\/schemas\/\w*Error(Body)?$/.test(ref)) continue;
        responses[name] ??= response;
        if (isDeepStrictEqual(responses[name], response)) op.responses[status] = { $ref: `#/components/responses/${name}` };
      }
    }
  }
  // The emitter writes no examples on response headers; without them a mock sends each header's
  // minimum (0), which Prism's own validator then reports as missing. These are the values of
  // common.tsp's RL example constant.
  const headerExamples = { "X-RateLimit-Limit": 600, "X-RateLimit-Remaining": 598, "X-RateLimit-Reset": 1795000060, "Retry-After": 12 };
  for (const [name, example] of Object.entries(headerExamples)) if (headers[name]) headers[name].example = example;
  components.headers = sortKeys(headers);
  components.responses = sortKeys(responses);
  const { schemas, responses: r, headers: h, securitySchemes, ...rest } = components;
  doc.components = { schemas, responses: r, headers: h, securitySchemes, ...rest };
}

function allowReservedInFreeText(doc) {
  const parameters = [
    ...Object.values(doc.components?.parameters ?? {}),
    ...Object.values(doc.paths ?? {}).flatMap((item) => [
      ...(item.parameters ?? []),
      ...Object.values(item).flatMap((op) => (op && typeof op === "object" && Array.isArray(op.parameters) ? op.parameters : [])),
    ]),
  ];
  for (const parameter of parameters) {
    const schema = parameter.schema;
    if (parameter.in === "query" && schema?.type === "string" && !schema.enum && !schema.format) parameter.allowReserved = true;
  }
}

function inlineNullableScalars(node, schemas) {
  if (Array.isArray(node)) return node.forEach((item) => inlineNullableScalars(item, schemas));
  if (!node || typeof node !== "object") return;
  const ref = node.nullable === true && node.allOf?.length === 1 ? node.allOf[0].$ref : undefined;
  const target = ref?.startsWith("#/components/schemas/") ? schemas[ref.slice("#/components/schemas/".length)] : undefined;
  if (target && target.type !== "object" && !target.allOf && !target.anyOf && !target.oneOf) {
    delete node.allOf;
    for (const [key, value] of Object.entries(target)) if (!(key in node)) node[key] = value;
    // A nullable enum lists null among its values, as OpenAPI 3.0.3 asks (`PaidPlan | null`).
    if (Array.isArray(node.enum) && !node.enum.includes(null)) node.enum = [...node.enum, null];
  }
  for (const value of Object.values(node)) inlineNullableScalars(value, schemas);
}

function sortKeys(object) {
  return Object.fromEntries(Object.entries(object).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * The document as YAML. A string that ends in a blank line (an event-stream example: the blank
 * line dispatches its last event) is written double-quoted on one line: as a `|+` block, Prism's
 * YAML reader (@stoplight/yaml) drops its last line break, and the mock then sends a stream whose
 * last event is never dispatched.
 */
function toYaml(doc) {
  const document = new YAML.Document(doc, { aliasDuplicateObjects: false });
  YAML.visit(document, {
    Scalar(_key, node) {
      if (typeof node.value === "string" && node.value.endsWith("\n\n")) node.type = "QUOTE_DOUBLE";
    },
  });
  return document.toString({ lineWidth: 0, doubleQuotedMinMultiLineLength: Infinity });
}
