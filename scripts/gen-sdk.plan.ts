// The SDK's resources as the contract names them: every operation's `@meta` `sdk` method
// (`auth.apiKeys.create`: the resource `auth.apiKeys`, the method `create`) becomes a method of a
// generated class, unless a hand-written class declares it (scripts/gen-sdk.hand-written.ts). The
// rules below are the calling conventions the hand-written resources followed before any was
// generated; an operation they cannot express (an upload, a stream, bytes, a header of its own) must
// be written by hand, and generation fails until it is.
import type { OperationInfo } from "../server/toolkit/contract.ts";
import type { HandWrittenClass } from "./gen-sdk.hand-written.ts";

/** The parts of the OpenAPI document (generated/openapi.json) the generator reads. */
export interface Document {
  tags?: { name: string; description?: string }[];
  paths: Record<string, Record<string, unknown>>;
  components: Record<string, Record<string, unknown>>;
}

interface Schema {
  $ref?: string;
  type?: string;
  properties?: Record<string, Schema>;
  allOf?: Schema[];
  items?: Schema;
}
interface Parameter {
  $ref?: string;
  name: string;
  in: "path" | "query" | "header" | "cookie";
  required?: boolean;
  description?: string;
  schema?: Schema;
}
interface Operation {
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, unknown> };
  responses: Record<string, { $ref?: string; description?: string; content?: Record<string, { schema?: Schema }> }>;
}

export interface PathParameter {
  /** Its name in the contract (`persona_id`). */
  name: string;
  /** The method's argument (`personaId`). */
  arg: string;
  type: string;
  description: string | undefined;
}

/** One generated method: the operation and the shape of its call. */
export interface PlannedMethod {
  name: string;
  op: OperationInfo;
  /** `call`: APIPromise of the JSON answer; `empty`: APIPromise<void> (204); `list`: a PageIterator over a paged list. */
  kind: "call" | "empty" | "list";
  /** In the path's order: the leading positional arguments. */
  pathParameters: PathParameter[];
  /** Its JSON body, if any: required, or defaulting to `{}`. */
  body: { required: boolean } | undefined;
  /** Its query, if any: required when one of its parameters is, else defaulting to `{}`. */
  query: { required: boolean } | undefined;
  /** How a list pages (pagination.ts): by offset, or by the last item's id (`before`). */
  cursor: "offset" | "before";
  /** The type of a list's item. */
  item: string;
  summary: string;
  description: string;
  /** Statuses of the operation's own error answers (those most operations share left out). */
  errors: number[];
}

export interface Resource {
  /** The dotted path on the client (`auth.apiKeys`). */
  path: string;
  /** The generated class (`GeneratedAuthApiKeys`). */
  className: string;
  /** What the contract's tag of its operations says it covers. */
  about: string | undefined;
  methods: PlannedMethod[];
  /** The hand-written subclass, if there is one, and the operations it writes itself. */
  handWritten: HandWrittenClass | undefined;
  handWrittenOps: { name: string; op: OperationInfo }[];
  /** Sub-resources: the generated class holds those its hand-written subclass does not declare. */
  children: Resource[];
}

// Errors that every operation, or every one with a body, may answer; a method's doc names only the
// others (402, 404, 409, 502: what the operation itself refuses or depends on).
const SHARED_ERRORS = new Set([400, 401, 403, 413, 415, 429, 500, 501, 503]);
const METHODS = ["get", "put", "post", "delete", "patch"];

const pascal = (name: string) => name[0]!.toUpperCase() + name.slice(1);
const camel = (name: string) => name.replace(/_([a-z0-9])/g, (_all, letter: string) => letter.toUpperCase());
export const classNameOf = (path: string) => `Generated${path.split(".").map(pascal).join("")}`;

/** The resource tree of the SDK, from the operations' `sdk` names and the hand-written classes. */
export function planResources(operations: OperationInfo[], document: Document, handWritten: Map<string, HandWrittenClass>): Resource[] {
  const lookup = new Lookup(document);
  const byPath = new Map<string, Resource>();
  const resourceAt = (path: string): Resource => {
    let resource = byPath.get(path);
    if (!resource) {
      const className = classNameOf(path);
      resource = { path, className, about: undefined, methods: [], handWritten: handWritten.get(className), handWrittenOps: [], children: [] };
      byPath.set(path, resource);
      const parent = path.includes(".") ? resourceAt(path.slice(0, path.lastIndexOf("."))) : undefined;
      parent?.children.push(resource);
    }
    return resource;
  };
  const problems: string[] = [];
  for (const op of operations) {
    if (op.sdk === undefined) continue;
    const parts = op.sdk.split(".");
    if (parts.length < 2 || parts.some((part) => !/^[a-z][A-Za-z0-9]*$/.test(part))) {
      problems.push(`${op.operationId}: @meta sdk "${op.sdk}" is not a dotted path of camelCase names (\`area.method\`, \`area.sub.method\`)`);
      continue;
    }
    const resource = resourceAt(parts.slice(0, -1).join("."));
    const name = parts.at(-1)!;
    const operation = lookup.operation(op);
    resource.about ??= lookup.tagDescription(operation.tags?.[0]);
    if (resource.handWritten?.members.includes(name)) {
      resource.handWrittenOps.push({ name, op });
      continue;
    }
    const planned = planMethod(name, op, operation, lookup);
    if (typeof planned === "string") {
      const where = resource.handWritten ? `${resource.handWritten.file} (class ${resource.handWritten.name})` : `a class extending ${resource.className} in sdk/src/resources/`;
      problems.push(`${op.operationId}: client.${op.sdk} is not a plain call (${planned}); write it by hand in ${where}`);
      continue;
    }
    if (resource.methods.some((method) => method.name === name)) problems.push(`${op.operationId}: client.${op.sdk} is named by another operation too`);
    resource.methods.push(planned);
  }
  for (const resource of byPath.values()) {
    for (const child of resource.children) {
      const property = child.path.slice(child.path.lastIndexOf(".") + 1);
      if (resource.methods.some((method) => method.name === property)) problems.push(`client.${child.path} is both a method and a resource`);
      // A hand-written sub-resource class is reached only through a hand-written property of its parent.
      if (child.handWritten && !resource.handWritten?.members.includes(property)) {
        problems.push(`client.${child.path} is written by hand (${child.handWritten.name}), so ${resource.handWritten?.name ?? `a hand-written subclass of ${resource.className}`} must declare \`readonly ${property}: ${child.handWritten.name}\``);
      }
    }
  }
  for (const [className, hand] of handWritten) {
    if (![...byPath.values()].some((resource) => resource.className === className)) problems.push(`${hand.file}: ${hand.name} extends ${className}, which names no resource of the contract's sdk methods`);
  }
  if (problems.length) throw new Error(`the SDK cannot be generated:\n  ${problems.join("\n  ")}`);
  return [...byPath.values()].sort((a, b) => a.path.localeCompare(b.path));
}

/** The method of a plain operation, or why it is not one. */
function planMethod(name: string, op: OperationInfo, operation: Operation, lookup: Lookup): PlannedMethod | string {
  const parameters = (operation.parameters ?? []).map((p) => lookup.parameter(p));
  const headers = parameters.filter((p) => p.in === "header" && p.name.toLowerCase() !== "idempotency-key");
  if (headers.length) return `it takes the header ${headers.map((p) => p.name).join(", ")}`;
  const media = Object.keys(operation.requestBody?.content ?? {});
  if (media.some((type) => type !== "application/json")) return `its body is ${media.join(", ")}`;
  const success = Object.entries(operation.responses).filter(([status]) => status.startsWith("2"));
  const answers = success.map(([status, response]) => ({ status, response: lookup.response(response) }));
  const json = answers.find(({ response }) => response.content?.["application/json"]);
  const empty = answers.length > 0 && answers.every(({ response }) => !response.content || Object.keys(response.content).length === 0);
  if (!json && !empty) return `it answers ${answers.flatMap(({ response }) => Object.keys(response.content ?? {})).join(", ") || "no success"}`;

  const inPath = parameters.filter((p) => p.in === "path");
  const order = [...op.path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]!);
  const pathParameters = order.map((paramName) => {
    const parameter = inPath.find((p) => p.name === paramName);
    return {
      name: paramName,
      arg: camel(paramName),
      type: tsType(parameter?.schema ? lookup.schema(parameter.schema) : undefined),
      description: parameter?.description,
    };
  });
  const args = pathParameters.map((p) => p.arg);
  for (const reserved of ["body", "query", "options", "q"]) if (args.includes(reserved)) return `a path parameter is named ${reserved}`;
  const query = parameters.filter((p) => p.in === "query");
  const answer = json ? lookup.properties(json.response.content!["application/json"]!.schema) : {};
  const data = answer.data ? lookup.schema(answer.data) : undefined;
  // A list: a GET whose answer is `{ data: [...] }` and whose query pages it by offset. Lists the
  // service answers whole (no `offset`) are plain calls.
  const paged = op.method === "GET" && data?.type === "array" && query.some((p) => p.name === "offset");
  const itemRef = data?.items?.$ref;
  return {
    name,
    op,
    kind: paged ? "list" : empty ? "empty" : "call",
    pathParameters,
    body: operation.requestBody ? { required: operation.requestBody.required === true } : undefined,
    query: query.length ? { required: query.some((p) => p.required) } : undefined,
    // Paging by `before` (the last item's id) where the answer carries no offset to advance.
    cursor: query.some((p) => p.name === "before") && !("offset" in answer) ? "before" : "offset",
    item: itemRef ? `Schemas["${itemRef.split("/").pop()}"]` : `ResponseOf<"${op.operationId}">["data"][number]`,
    summary: operation.summary ?? "",
    description: operation.description ?? "",
    errors: Object.keys(operation.responses).map(Number).filter((status) => status >= 400 && !SHARED_ERRORS.has(status)),
  };
}

function tsType(schema: Schema | undefined): string {
  if (schema?.type === "integer" || schema?.type === "number") return "number";
  if (schema?.type === "boolean") return "boolean";
  return "string";
}

/** `$ref`s resolved against the document. */
class Lookup {
  readonly #document: Document;

  constructor(document: Document) {
    this.#document = document;
  }

  operation(op: OperationInfo): Operation {
    const operation = this.#document.paths[op.path]?.[op.method.toLowerCase()];
    if (!operation || !METHODS.includes(op.method.toLowerCase())) throw new Error(`${op.operationId}: ${op.method} ${op.path} is not in generated/openapi.json`);
    return operation as Operation;
  }

  tagDescription(tag: string | undefined): string | undefined {
    return this.#document.tags?.find((candidate) => candidate.name === tag)?.description;
  }

  #resolve<T extends { $ref?: string }>(value: T): T {
    let current = value;
    for (let depth = 0; current.$ref && depth < 20; depth++) {
      const [, section, name] = /^#\/components\/(\w+)\/(.+)$/.exec(current.$ref) ?? [];
      const target = section && name ? this.#document.components[section]?.[name] : undefined;
      if (!target) throw new Error(`unresolvable $ref ${current.$ref}`);
      current = target as T;
    }
    return current;
  }

  parameter(parameter: Parameter): Parameter {
    return this.#resolve(parameter);
  }

  response<T extends { $ref?: string }>(response: T): T {
    return this.#resolve(response);
  }

  schema(schema: Schema): Schema {
    return this.#resolve(schema);
  }

  /** An object schema's properties, through `$ref` and `allOf`. */
  properties(schema: Schema | undefined): Record<string, Schema> {
    if (!schema) return {};
    const resolved = this.#resolve(schema);
    return Object.assign({}, ...(resolved.allOf ?? []).map((part) => this.properties(part)), resolved.properties ?? {});
  }
}
