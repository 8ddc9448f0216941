import { readFileSync } from "node:fs";
import { edition } from "../edition.ts";

/**
 * The operations of the contract as `persona api` needs them, read at run time, so that every
 * operation appears as soon as the contract has it. The JSON twin of generated/openapi.yaml is
 * read because parsing the YAML takes about a second (scripts/gen.mjs writes both).
 */
export const contractFile = edition.contractFile;

/** The parts of an OpenAPI 3.0 schema object that `persona api` reads. */
export interface Schema {
  $ref?: string;
  type?: string;
  format?: string;
  enum?: unknown[];
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  allOf?: Schema[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  nullable?: boolean;
  description?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
}

export interface ApiParameter {
  name: string;
  in: "path" | "query" | "header";
  required: boolean;
  description: string | undefined;
  schema: Schema;
  example: unknown;
}

export interface ApiBody {
  contentType: string;
  required: boolean;
  schema: Schema;
  example: unknown;
}

export interface ApiResponse {
  status: string;
  contentTypes: string[];
  schema: Schema | undefined;
}

export interface ApiOperation {
  id: string;
  method: string;
  path: string;
  tag: string;
  summary: string;
  description: string;
  /** The scope the contract names; undefined for a credential-free operation. */
  scope: string | undefined;
  parameters: ApiParameter[];
  body: ApiBody | undefined;
  /** The binary parts of a multipart body (`file`, `audio`). */
  fileFields: string[];
  /** The 2xx and 3xx answers. */
  successes: ApiResponse[];
}

export interface ApiContract {
  tags: { name: string; description: string }[];
  operations: ApiOperation[];
  /** Follows `$ref`s (and a lone `allOf`) to the schema they name. */
  resolve: (schema: Schema) => Schema;
}

interface RawOperation {
  operationId: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: (Partial<ApiParameter> & { $ref?: string })[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema; example?: unknown; examples?: Record<string, { value?: unknown }> }> };
  responses?: Record<string, { $ref?: string; content?: Record<string, { schema?: Schema }> }>;
  security?: Record<string, string[]>[];
}

interface RawDocument {
  tags?: { name: string; description?: string }[];
  paths: Record<string, Record<string, RawOperation>>;
}

const METHODS = ["get", "post", "put", "patch", "delete"];
// The body the CLI sends when an operation accepts several kinds (OAuth's token endpoint takes both).
const BODY_PREFERENCE = ["application/json", "multipart/form-data", "application/x-www-form-urlencoded"];

export function loadContract(file = contractFile): ApiContract {
  const doc = JSON.parse(readFileSync(file, "utf8")) as RawDocument;
  const lookup = (ref: string): unknown =>
    ref
      .replace(/^#\//, "")
      .split("/")
      .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"))
      .reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], doc);
  const deref = <T>(value: T & { $ref?: string }): T => (value.$ref ? deref(lookup(value.$ref) as T & { $ref?: string }) : value);
  const resolve = (schema: Schema): Schema => {
    const target = deref(schema);
    // `{allOf: [ref], default, description}` is how the emitter writes a field of a named type.
    if (target.allOf?.length === 1 && !target.properties) return { ...resolve(target.allOf[0]!), ...withoutAllOf(target) };
    return target;
  };

  const operations: ApiOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const parameters = (op.parameters ?? []).map((raw) => {
        const p = deref(raw);
        return { name: p.name!, in: p.in!, required: p.required ?? false, description: p.description, schema: p.schema ?? {}, example: p.example };
      });
      const contentType = BODY_PREFERENCE.find((type) => op.requestBody?.content?.[type]) ?? Object.keys(op.requestBody?.content ?? {})[0];
      const media = contentType ? op.requestBody!.content![contentType]! : undefined;
      const body = media && contentType
        ? { contentType, required: op.requestBody!.required ?? false, schema: media.schema ?? {}, example: media.example ?? Object.values(media.examples ?? {})[0]?.value }
        : undefined;
      const bodyFields = body?.contentType === "multipart/form-data" ? Object.entries(resolve(body.schema).properties ?? {}) : [];
      operations.push({
        id: op.operationId,
        method: method.toUpperCase(),
        path,
        tag: op.tags?.[0] ?? "other",
        summary: op.summary ?? "",
        description: op.description ?? "",
        scope: op.security?.find((requirement) => requirement.OAuth2Auth)?.OAuth2Auth?.[0],
        parameters,
        body,
        fileFields: bodyFields.filter(([, field]) => resolve(field).format === "binary").map(([name]) => name),
        successes: Object.entries(op.responses ?? {})
          .filter(([status]) => /^[23]/.test(status))
          .map(([status, raw]) => {
            const content = deref(raw).content ?? {};
            return { status, contentTypes: Object.keys(content), schema: Object.values(content)[0]?.schema };
          }),
      });
    }
  }
  const tags = (doc.tags ?? []).map((tag) => ({ name: tag.name, description: tag.description ?? "" }));
  return { tags, operations, resolve };
}

function withoutAllOf(schema: Schema): Schema {
  const { allOf: _allOf, ...rest } = schema;
  return rest;
}
