import type { ApiContract, Schema } from "./contract.ts";

const refName = (schema: Schema) => schema.$ref?.split("/").pop();

/**
 * A schema as a short type for help texts: `uuid`, `integer`, `created_at|updated_at|name`,
 * `string[]`, `Persona`. A named object keeps its name; a named scalar or enum shows what it holds.
 */
export function typeLabel(schema: Schema, contract: ApiContract): string {
  const label = bareLabel(schema, contract);
  return schema.nullable || contract.resolve(schema).nullable ? `${label} | null` : label;
}

function bareLabel(schema: Schema, contract: ApiContract): string {
  if (schema.allOf?.length === 1 && !schema.properties) return bareLabel(schema.allOf[0]!, contract);
  const named = refName(schema);
  const target = contract.resolve(schema);
  if (target.enum) return target.enum.map(String).join("|");
  if (named && (target.type === "object" || target.properties || target.oneOf || target.anyOf)) return named;
  const union = target.oneOf ?? target.anyOf;
  if (union) return union.map((member) => bareLabel(member, contract)).join(" | ");
  if (target.type === "array") return `${target.items ? bareLabel(target.items, contract) : "any"}[]`;
  if (target.format === "binary") return "file";
  if (target.type === "string" && target.format) return target.format;
  return target.type ?? named ?? "any";
}

/** The limits and default of a value, e.g. `1..100, default 20` or `at most 300 chars`. */
export function limits(schema: Schema, contract: ApiContract): string[] {
  const s = { ...contract.resolve(schema), ...(schema.default !== undefined ? { default: schema.default } : {}) };
  const range = (low: number | undefined, high: number | undefined, unit: string) =>
    low !== undefined && high !== undefined
      ? `${low}..${high}${unit}`
      : low !== undefined
        ? `at least ${low}${unit}`
        : high !== undefined
          ? `at most ${high}${unit}`
          : undefined;
  const parts = [
    range(s.minimum, s.maximum, ""),
    // "At least 1 char" says nothing a person needs told.
    range((s.minLength ?? 0) > 1 || s.maxLength !== undefined ? s.minLength : undefined, s.maxLength, " chars"),
    range(s.minItems, s.maxItems, " items"),
    s.default !== undefined ? `default ${JSON.stringify(s.default)}` : undefined,
  ];
  return parts.filter((part): part is string => part !== undefined);
}

/** The top-level fields of an object schema, in the contract's order. */
export function fieldsOf(schema: Schema, contract: ApiContract): { name: string; schema: Schema; required: boolean }[] {
  const target = contract.resolve(schema);
  const required = new Set(target.required ?? []);
  return Object.entries(target.properties ?? {}).map(([name, field]) => ({ name, schema: field, required: required.has(name) }));
}

/** A description on one line (the contract's are wrapped at about 100 columns). */
export function oneLine(text: string | undefined): string {
  return (text ?? "").replace(/\s+/g, " ").trim();
}
