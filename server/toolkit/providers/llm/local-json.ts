import type { ResponseFormat } from "./types.ts";

// A schema nested deeper than this is answered with null below that depth (self-referencing schemas end).
const MAX_DEPTH = 8;

/**
 * The offline model's JSON reply: `{"reply": text}` for `json_object`, and for `json_schema` the
 * smallest value the schema describes, with `text` in its string fields, so that a client parsing
 * structured output gets a value of the shape it asked for.
 */
export function localJson(format: Exclude<ResponseFormat, { type: "text" }>, text: string): string {
  if (format.type === "json_object") return JSON.stringify({ reply: text });
  return JSON.stringify(instanceOf(format.schema ?? {}, text, format.schema ?? {}, 0));
}

type Schema = Record<string, unknown>;

function instanceOf(schema: Schema, text: string, root: Schema, depth: number): unknown {
  if (depth > MAX_DEPTH) return null;
  const ref = typeof schema.$ref === "string" ? resolve(root, schema.$ref) : undefined;
  if (ref) return instanceOf(ref, text, root, depth + 1);
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const variants = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (Array.isArray(variants) && variants.length > 0) return instanceOf(variants.find((v) => v.type !== "null") ?? variants[0]!, text, root, depth + 1);
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0) return instanceOf(Object.assign({}, ...(schema.allOf as Schema[])), text, root, depth + 1);
  const type = Array.isArray(schema.type) ? (schema.type.find((t) => t !== "null") as string | undefined) : (schema.type as string | undefined);
  switch (type ?? (schema.properties ? "object" : schema.items ? "array" : "string")) {
    case "object": {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      return Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, instanceOf(property, text, root, depth + 1)]));
    }
    case "array": {
      const min = typeof schema.minItems === "number" ? schema.minItems : 0;
      return Array.from({ length: Math.min(min, 10) }, () => instanceOf((schema.items ?? {}) as Schema, text, root, depth + 1));
    }
    case "integer":
    case "number":
      return typeof schema.minimum === "number" ? schema.minimum : 0;
    case "boolean":
      return false;
    case "null":
      return null;
    default:
      return text;
  }
}

/** A local `#/...` reference of the schema; other references are not followed. */
function resolve(root: Schema, ref: string): Schema | undefined {
  if (!ref.startsWith("#")) return undefined;
  let node: unknown = root;
  for (const part of ref.slice(1).split("/").filter(Boolean)) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Schema)[decodeURIComponent(part.replace(/~1/g, "/").replace(/~0/g, "~"))];
  }
  return typeof node === "object" && node !== null ? (node as Schema) : undefined;
}
