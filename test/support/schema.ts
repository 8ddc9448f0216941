import { Ajv, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import { contract, type JsonSchema } from "./contract.ts";

// ajv-formats ships CommonJS; under NodeNext its default export is the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

const CONTRACT_ID = "contract.json";

/**
 * OpenAPI 3.0 schemas are not JSON Schema: `nullable` replaces a "null" type, `example` is not a
 * keyword, and component references point into the OpenAPI document. This rewrites one schema
 * (recursively) into draft-07 that ajv accepts in strict mode.
 */
export function toJsonSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(toJsonSchema);
  if (!schema || typeof schema !== "object") return schema;
  const { nullable, example: _example, ...rest } = schema as JsonSchema;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(rest)) {
    if (key === "$ref" && typeof value === "string") out.$ref = value.replace(/^#\/components\/schemas\//, `${CONTRACT_ID}#/definitions/`);
    else if (key === "properties" && value && typeof value === "object") {
      out.properties = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, toJsonSchema(sub)]));
    } else if (["items", "additionalProperties", "not", "allOf", "anyOf", "oneOf"].includes(key)) out[key] = toJsonSchema(value);
    else out[key] = value;
  }
  if (nullable !== true) return out;
  if (typeof out.type === "string" && !out.$ref) {
    // A nullable enum of the contract lists null already (scripts/gen.mjs); others get it here.
    return { ...out, type: [out.type, "null"], ...(Array.isArray(out.enum) && !out.enum.includes(null) ? { enum: [...out.enum, null] } : {}) };
  }
  return { anyOf: [out, { type: "null" }] };
}

const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false, allowUnionTypes: true });
addFormats(ajv);
// OpenAPI's numeric and string formats that JSON Schema does not define.
ajv.addFormat("int32", { type: "number", validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 });
ajv.addFormat("int64", { type: "number", validate: (n: number) => Number.isInteger(n) });
for (const name of ["float", "double"]) ajv.addFormat(name, { type: "number", validate: () => true });
for (const name of ["binary", "byte", "password"]) ajv.addFormat(name, true);

ajv.addSchema({
  $id: CONTRACT_ID,
  definitions: Object.fromEntries(Object.entries(contract.components.schemas).map(([n, s]) => [n, toJsonSchema(s)])),
});

const compiled = new WeakMap<object, ValidateFunction>();

/** The validation errors of `value` against a contract schema, or [] when it conforms. */
export function schemaErrors(schema: JsonSchema, value: unknown): string[] {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(toJsonSchema(schema) as JsonSchema);
    compiled.set(schema, validate);
  }
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? "is invalid"}${e.params ? ` ${JSON.stringify(e.params)}` : ""}`);
}
