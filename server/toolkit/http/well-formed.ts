import { isUtf8 } from "node:buffer";
import type { Request, RequestHandler } from "express";
import { invalidField, validationFailed, type FieldError } from "./error-catalogue.ts";
import { keepRawBody } from "./raw-body.ts";

// Text that the contract's types allow but that cannot be stored as sent: PostgreSQL refuses NUL
// in text and jsonb, and a lone UTF-16 surrogate is not Unicode (it would be stored as U+FFFD, or
// refused by jsonb). Both are refused with a 400 before any handler runs, on every operation, so
// that nothing is half-written and nothing is stored other than what the client sent.


// With the u flag a surrogate pair is one code point, so only a lone surrogate matches.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** What is wrong with `text`, if anything. */
function textProblem(text: string): string | undefined {
  if (text.includes("\u0000")) return "must not contain the NUL character (U+0000)";
  if (LONE_SURROGATE.test(text)) return "must be well-formed Unicode (it holds a lone UTF-16 surrogate)";
  return undefined;
}

interface Node {
  value: unknown;
  parent: Node | undefined;
  segment: string;
  /** A problem of the property name this value sits under, reported before the value's own. */
  keyProblem?: string;
}

const pathOf = (node: Node): string => {
  const segments: string[] = [];
  for (let at: Node | undefined = node; at?.parent; at = at.parent) segments.push(at.segment);
  return segments.reverse().map((segment) => `/${segment}`).join("");
};

/**
 * Walks with a stack of its own, not by recursion: a valid JSON body nested 100,000 deep would
 * overflow the call stack (a 500), and paths are built only for what is reported.
 */
function collect(root: unknown, rootPath: string, errors: FieldError[]): void {
  const stack: Node[] = [{ value: root, parent: undefined, segment: "" }];
  const full = (node: Node) => `${rootPath}${pathOf(node)}`;
  while (stack.length) {
    const node = stack.pop()!;
    if (node.keyProblem) errors.push({ path: node.parent ? full(node.parent) : rootPath, message: `has a property name that ${node.keyProblem}` });
    const { value } = node;
    if (typeof value === "string") {
      const problem = textProblem(value);
      if (problem) errors.push({ path: full(node), message: problem });
    } else if (Array.isArray(value)) {
      for (let index = value.length - 1; index >= 0; index--) stack.push({ value: value[index], parent: node, segment: String(index) });
    } else if (value && typeof value === "object" && !Buffer.isBuffer(value)) {
      const entries = Object.entries(value);
      for (let index = entries.length - 1; index >= 0; index--) {
        const [key, item] = entries[index]!;
        const keyProblem = textProblem(key);
        stack.push({ value: item, parent: node, segment: key, ...(keyProblem ? { keyProblem } : {}) });
      }
    }
  }
}

const refuse = (errors: FieldError[]) => validationFailed(errors);

/**
 * Percent-encoded bytes in the URL must be UTF-8. Express's query parser would quietly turn
 * anything else into U+FFFD, so the raw URL is checked before it.
 */
function urlErrors(req: Request): FieldError[] {
  const [path = "", query = ""] = req.originalUrl.split("?", 2);
  const errors: FieldError[] = [];
  try {
    decodeURIComponent(path);
  } catch {
    errors.push({ path: "/path", message: "is not valid UTF-8 percent-encoding" });
  }
  for (const pair of query.split("&")) {
    if (!pair) continue;
    const [name = "", value = ""] = pair.split("=", 2);
    for (const part of [name, value]) {
      try {
        decodeURIComponent(part.replace(/\+/g, " "));
      } catch {
        errors.push({ path: `/query/${safeName(name)}`, message: "is not valid UTF-8 percent-encoding" });
        break;
      }
    }
  }
  return errors;
}

const safeName = (name: string) => {
  try {
    return decodeURIComponent(name);
  } catch {
    return name.replace(/%/g, "");
  }
};

/**
 * Body parsers' `verify`: a body that is not UTF-8 is refused rather than decoded with U+FFFD. The
 * bytes are kept on the request (http/raw-body.ts): a signature (a payment provider's or a chat
 * platform's) is over the raw body, which re-serialising the parsed JSON would not reproduce.
 */
export function verifyUtf8Body(req: unknown, _res: unknown, body: Buffer): void {
  if (!isUtf8(body)) throw Object.assign(new Error("The request body is not valid UTF-8"), { type: "body.not_utf8" });
  keepRawBody(req as object, body);
}

/** Form bodies are ASCII with percent-encoded bytes, which must decode as UTF-8. */
export function verifyUtf8Form(_req: unknown, _res: unknown, body: Buffer): void {
  verifyUtf8Body(_req, _res, body);
  for (const pair of body.toString("latin1").split("&")) {
    try {
      decodeURIComponent(pair.replace(/\+/g, " "));
    } catch {
      throw Object.assign(new Error("The form body holds percent-encoded bytes that are not UTF-8"), { type: "body.not_utf8" });
    }
  }
}

/** Runs before the contract's request checks: the raw URL, and a body the operation requires. */
export const refuseMalformedUrlOrMissingBody: RequestHandler = (req, _res, next) => {
  const errors = urlErrors(req);
  if (errors.length) return next(refuse(errors));
  const requestBody = (req as Request & { openapi?: { schema?: { requestBody?: { required?: boolean } } } }).openapi?.schema?.requestBody;
  if (requestBody?.required && !hasBody(req)) {
    return next(invalidField("/body", "is required", "The request body is required"));
  }
  next();
};

function hasBody(req: Request): boolean {
  if (req.headers["transfer-encoding"] !== undefined) return true;
  const length = Number(req.headers["content-length"] ?? 0);
  return Number.isFinite(length) && length > 0;
}

/** Runs once every body is parsed (multipart included): every text the request carries. */
export const refuseIllFormedText: RequestHandler = (req, _res, next) => {
  const errors: FieldError[] = [];
  const pathParams = (req as Request & { openapi?: { pathParams?: Record<string, unknown> } }).openapi?.pathParams;
  collect(pathParams ?? {}, "/path", errors);
  collect(req.query, "/query", errors);
  collect(req.body, "/body", errors);
  for (const file of (req.files as { fieldname: string; originalname: string }[] | undefined) ?? []) {
    const problem = textProblem(file.originalname);
    if (problem) errors.push({ path: `/body/${file.fieldname}`, message: `has a file name that ${problem}` });
  }
  next(errors.length ? refuse(errors) : undefined);
};
