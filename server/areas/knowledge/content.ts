import { csvFields, CsvError } from "./csv.ts";
import { MAX_JSON_DEPTH, MAX_JSON_VALUES } from "./limits.ts";

// What an upload's bytes must be, by kind. Imports nothing of the HTTP layer: the checks run in the
// knowledge worker thread (issue 31 H1/M8: parsing 10 MB of JSON or CSV took the API's event loop
// for seconds).

export const KINDS = ["txt", "md", "csv", "json", "pdf"] as const;
export type DocumentKind = (typeof KINDS)[number];

/** Valid UTF-8 without NUL bytes (binary files saved under a text extension have them); a BOM is dropped. */
export function decodeText(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return undefined;
  }
}

const BACKSLASH = 0x5c;
const QUOTE = 0x22;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/**
 * What in a JSON text is over a document's limits, before it is parsed: objects and arrays nested
 * more than `MAX_JSON_DEPTH` deep, or more than `MAX_JSON_VALUES` values (the top-level value, array
 * elements and object members). One pass over the text; on text that is not JSON the answer means
 * nothing but still comes in one pass.
 *
 * Why before: JSON.parse is one native call that the worker thread's heap limit cannot stop in
 * time (Node ends a thread at its limit only between JavaScript steps; a parse that goes on
 * allocating past it aborts the whole process, nodejs/node#47224). 10 MB of `{},` parse into 3.5
 * million objects (over 200 MB); a million values take at most about 125 MB (measured).
 */
export function jsonOverLimits(json: string): string | undefined {
  let depth = 0;
  // The top-level value, then each array element and object member: what follows `[`, `{` or `,`.
  let values = 1;
  let inString = false;
  // The last character outside strings and white space (a string counts as its opening quote).
  let previous = 0;
  for (let i = 0; i < json.length; i++) {
    const code = json.charCodeAt(i);
    if (inString) {
      if (code === BACKSLASH) i++;
      else if (code === QUOTE) inString = false;
      continue;
    }
    if (code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d) continue;
    if ((previous === OPEN_ARRAY || previous === OPEN_OBJECT || previous === COMMA) && code !== CLOSE_ARRAY && code !== CLOSE_OBJECT) {
      if (++values > MAX_JSON_VALUES) return `holds more than ${MAX_JSON_VALUES} values`;
    }
    if (code === QUOTE) {
      inString = true;
    } else if (code === OPEN_ARRAY || code === OPEN_OBJECT) {
      if (++depth > MAX_JSON_DEPTH) return `nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep`;
    } else if (code === CLOSE_ARRAY || code === CLOSE_OBJECT) {
      depth--;
    }
    previous = code;
  }
  return undefined;
}

/** Why an upload's content is refused: `unsupported` is 415, `empty` is 400 on the file part. */
export interface ContentProblem {
  problem: "unsupported" | "empty";
  message: string;
}

/**
 * What is wrong with a text upload's content, if anything: text kinds must be UTF-8 text with more
 * than white space, JSON must be within `jsonOverLimits` and parse, and CSV must be well-formed. A
 * PDF's header is checked before (files.ts); its body is read only when the document is processed.
 */
export function contentProblem(kind: DocumentKind, bytes: Uint8Array): ContentProblem | undefined {
  if (kind === "pdf") return undefined;
  const text = decodeText(bytes);
  if (text === undefined) return { problem: "unsupported", message: `The file is named .${kind} but is not UTF-8 text` };
  if (!text.trim()) return { problem: "empty", message: "The file holds no text, only white space" };
  if (kind === "json") {
    const over = jsonOverLimits(text);
    if (over) return { problem: "unsupported", message: `The file's JSON ${over}, over a document's limit` };
    try {
      JSON.parse(text);
    } catch (error) {
      return { problem: "unsupported", message: `The file is named .json but is not valid JSON: ${(error as Error).message}` };
    }
  }
  if (kind === "csv") {
    try {
      // Every field is read and let go: well-formedness needs nothing kept.
      for (const field of csvFields(text)) void field;
    } catch (error) {
      if (error instanceof CsvError) return { problem: "unsupported", message: `The file is named .csv but is not valid CSV: ${error.message}` };
      throw error;
    }
  }
  return undefined;
}
