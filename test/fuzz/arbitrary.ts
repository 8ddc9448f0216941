import fc from "fast-check";
import { deref, type Schema } from "./contract.ts";

// JSON Schema (the OpenAPI 3.0 subset the contract uses: type, format, enum, pattern, lengths,
// bounds, items, properties, required, additionalProperties, allOf, anyOf, nullable) -> a
// fast-check arbitrary of values the schema accepts. Written here because the one package that
// claims to do it (json-schema-fast-check 0.0.6) is unmaintained and knows no OpenAPI `nullable`.

/** A file part of a multipart body. */
export class FilePart {
  readonly filename: string;
  readonly contentType: string;
  readonly bytes: Uint8Array;
  constructor(filename: string, contentType: string, bytes: Uint8Array) {
    this.filename = filename;
    this.contentType = contentType;
    this.bytes = bytes;
  }
}

export interface GenContext {
  /** The fixtures' values for a field or parameter of this name, when the world has some. */
  valuesFor: (name: string) => string[] | undefined;
  /** URLs the service may be given: loopback only, so that nothing it fetches leaves the machine. */
  url: fc.Arbitrary<string>;
}

/** A schema with its `$ref` followed and its `allOf` merged into one. */
export function flatten(schema: Schema | undefined): Schema {
  if (!schema) return {};
  const own = deref(schema);
  if (!Array.isArray(own.allOf)) return own;
  const { allOf, ...rest } = own;
  const merged: Schema = {};
  for (const part of allOf as Schema[]) {
    const flat = flatten(part);
    Object.assign(merged, flat, {
      properties: { ...(merged.properties as Schema), ...(flat.properties as Schema) },
      required: [...((merged.required as string[]) ?? []), ...((flat.required as string[]) ?? [])],
    });
  }
  return { ...merged, ...rest };
}

const asciiUnit = fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 1 });
const unicodeUnit = fc.string({ unit: "grapheme-composite", minLength: 1, maxLength: 1 });
/** One code point per unit (so lengths count as the contract counts them), mostly ASCII. */
const textUnit = fc.oneof({ weight: 6, arbitrary: asciiUnit }, { weight: 1, arbitrary: unicodeUnit });

const LOOKAHEAD = /\(\?=\.\*(\[[^\]]+\]|\\.|.)\)/g;

/** Strings matching `pattern`; fast-check cannot generate lookaheads, so each `(?=.*X)` is met by an X up front. */
function matching(pattern: string): fc.Arbitrary<string> {
  const full = new RegExp(pattern);
  const needs = [...pattern.matchAll(LOOKAHEAD)].map((m) => m[1]!);
  if (!needs.length) return fc.stringMatching(full);
  const base = fc.stringMatching(new RegExp(pattern.replace(LOOKAHEAD, "")));
  return fc
    .tuple(base, ...needs.map((need) => fc.stringMatching(new RegExp(`^${need}$`))))
    .map(([text, ...prefix]) => prefix.join("") + text.slice(prefix.length))
    .filter((text) => full.test(text));
}

const email = fc
  .tuple(fc.stringMatching(/^[a-z0-9]{1,20}([._+-][a-z0-9]{1,8})?$/), fc.constantFrom("example.com", "example.org", "mail.example.net", "xn--bcher-kva.example"))
  .map(([local, domain]) => `${local}@${domain}`);

const dateTime = fc.date({ min: new Date("1971-01-01T00:00:00Z"), max: new Date("2099-12-31T00:00:00Z"), noInvalidDate: true }).map((d) => d.toISOString());

const fileNames = fc.constantFrom("notes.txt", "guide.md", "table.csv", "data.json", "paper.pdf", "clip.mp3", "clip.wav", "voice.ogg", "movie.webm", "run.exe", "noextension", "ünïcødé ✓.txt", "../../etc/passwd.txt", `${"x".repeat(300)}.txt`);

/** A tiny WAV file of silence: a real audio container that speech-to-text can open. */
function wavOfSilence(samples: number): Uint8Array {
  const data = samples * 2;
  const out = Buffer.alloc(44 + data);
  out.write("RIFF", 0);
  out.writeUInt32LE(36 + data, 4);
  out.write("WAVEfmt ", 8);
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(1, 20);
  out.writeUInt16LE(1, 22);
  out.writeUInt32LE(16_000, 24);
  out.writeUInt32LE(32_000, 28);
  out.writeUInt16LE(2, 32);
  out.writeUInt16LE(16, 34);
  out.write("data", 36);
  out.writeUInt32LE(data, 40);
  return new Uint8Array(out);
}

const fileContent = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: textUnit, minLength: 1, maxLength: 400 }).map((text) => new TextEncoder().encode(`Notes\n\n${text}\n`)) },
  { weight: 1, arbitrary: fc.constant(new TextEncoder().encode('{"a": {"b": [1, 2, "three"]}}')) },
  { weight: 1, arbitrary: fc.constant(new TextEncoder().encode("name,age\nAda,36\n\"Grace, H\",45\n")) },
  { weight: 1, arbitrary: fc.constant(wavOfSilence(1600)) },
  { weight: 1, arbitrary: fc.uint8Array({ minLength: 0, maxLength: 512 }) },
);

export const filePart = fc.tuple(fileNames, fileContent).map(([name, bytes]) => new FilePart(name, "application/octet-stream", bytes));

const jsonLeaf = fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean(), fc.constant(null));

function stringOf(schema: Schema, ctx: GenContext, name: string | undefined): fc.Arbitrary<unknown> {
  const min = (schema.minLength as number | undefined) ?? 0;
  const max = (schema.maxLength as number | undefined) ?? Math.max(min, 64);
  const fits = (text: string) => [...text].length >= min && [...text].length <= max;
  let arb: fc.Arbitrary<string>;
  switch (schema.format) {
    case "uuid":
      arb = fc.uuid();
      break;
    case "email":
      arb = email.filter(fits);
      break;
    case "date-time":
      arb = dateTime;
      break;
    case "date":
      arb = dateTime.map((iso) => iso.slice(0, 10));
      break;
    case "uri":
      arb = ctx.url.filter(fits);
      break;
    case "binary":
      return filePart;
    default:
      arb = schema.pattern
        ? matching(String(schema.pattern)).filter(fits)
        : fc.string({ unit: textUnit, minLength: min, maxLength: Math.max(min, Math.min(max, 120)) });
  }
  const known = name ? ctx.valuesFor(name) : undefined;
  return known?.length ? fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...known) }, { weight: 1, arbitrary: arb }) : arb;
}

/** Values `schema` accepts. `name` is the field's or parameter's name, used to pick fixtures. */
export function valid(schemaIn: Schema | undefined, ctx: GenContext, name?: string, depth = 0): fc.Arbitrary<unknown> {
  const schema = flatten(schemaIn);
  const arb = validNotNull(schema, ctx, name, depth);
  return schema.nullable === true ? fc.option(arb, { nil: null, freq: 5 }) : arb;
}

function validNotNull(schema: Schema, ctx: GenContext, name: string | undefined, depth: number): fc.Arbitrary<unknown> {
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]).filter((v) => v !== null));
  const alternatives = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (alternatives) return fc.oneof(...alternatives.map((alt) => valid(alt, ctx, name, depth + 1)));
  if (depth > 6) return fc.constant(schema.example ?? null);
  switch (schema.type) {
    case "string":
      return stringOf(schema, ctx, name);
    case "integer": {
      const wide = schema.format === "int64" ? Number.MAX_SAFE_INTEGER : 2 ** 31 - 1;
      return fc.integer({ min: (schema.minimum as number | undefined) ?? -wide, max: (schema.maximum as number | undefined) ?? wide });
    }
    case "number":
      return fc.double({ min: (schema.minimum as number | undefined) ?? -1e9, max: (schema.maximum as number | undefined) ?? 1e9, noNaN: true, noDefaultInfinity: true });
    case "boolean":
      return fc.boolean();
    case "array": {
      const items = valid(schema.items as Schema, ctx, name, depth + 1);
      const minLength = (schema.minItems as number | undefined) ?? 0;
      const maxLength = Math.max(minLength, Math.min((schema.maxItems as number | undefined) ?? 4, 4));
      return schema.uniqueItems ? fc.uniqueArray(items, { minLength, maxLength, selector: (v) => JSON.stringify(v) }) : fc.array(items, { minLength, maxLength });
    }
    default: {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      if (!Object.keys(properties).length) return fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), jsonLeaf, { maxKeys: 3 });
      const model = Object.fromEntries(Object.entries(properties).map(([key, sub]) => [key, valid(sub, ctx, key, depth + 1)]));
      const required = ((schema.required as string[] | undefined) ?? []).filter((key) => key in properties);
      return fc.record(model, { requiredKeys: required });
    }
  }
}
