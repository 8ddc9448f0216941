import { normalizeLineEnds } from "./bulk-text.ts";
import { csvFields } from "./csv.ts";
import { decodeText, jsonOverLimits, type DocumentKind } from "./content.ts";
import { BoundedText, ExtractionError, type ExtractedText } from "./extracted.ts";
import { MAX_CSV_NAMED_COLUMNS, MAX_PDF_PAGES, MAX_PDF_STREAM_BYTES, MAX_TEXT_CHARS } from "./limits.ts";
import { pdfToText } from "./pdf.ts";

export { ExtractionError, type ExtractedText } from "./extracted.ts";

// Each conversion writes into a BoundedText and stops once it is full, so a file that expands as it
// becomes text (issue 31 M8) costs no more than its limit.

/**
 * CSV as one paragraph per row of `header: value` lines, so a chunk boundary falls between rows.
 * Columns past the first `MAX_CSV_NAMED_COLUMNS` are named by number.
 */
export function csvToText(csv: string, limit = Infinity): ExtractedText {
  const out = new BoundedText(limit);
  // Names are kept for the first columns only: a header of 10 MB of commas is 5 million names.
  const header: string[] = [];
  let headerColumns = 0;
  let inHeader = true;
  const name = (i: number) => header[i]?.trim() || `column ${i + 1}`;
  let dataRows = 0;
  let paragraphs = 0;
  let column = 0;
  let lines = 0;
  for (const field of csvFields(csv)) {
    if (inHeader) {
      if (headerColumns++ < MAX_CSV_NAMED_COLUMNS) header.push(field.value);
      inHeader = !field.last;
      continue;
    }
    if (column === 0) {
      dataRows++;
      lines = 0;
    }
    const value = field.value.trim();
    if (value !== "") {
      const separator = lines++ > 0 ? "\n" : paragraphs++ > 0 ? "\n\n" : "";
      if (!out.add(separator) || !out.add(`${name(column)}: ${value}`)) return out.result();
    }
    column = field.last ? 0 : column + 1;
  }
  // A header alone: the column names are the text.
  if (dataRows === 0) {
    for (let i = 0; i < headerColumns; i++) if (!out.add(i > 0 ? `, ${name(i)}` : name(i))) break;
  }
  return out.result();
}

type JsonContainer = unknown[] | Record<string, unknown>;

/**
 * Writes `key.path: value` lines for `root` through `line`, depth first, with a stack of its own
 * (a file nested a million deep needs no call stack). False once `line` refuses more.
 */
function walkJson(root: unknown, rootPath: string, line: (text: string) => boolean): boolean {
  const stack: { container: JsonContainer; keys: string[] | undefined; index: number; path: string }[] = [];
  const visit = (node: unknown, path: string): boolean => {
    if (Array.isArray(node)) {
      if (node.length === 0) return line(`${path || "(root)"}: []`);
      stack.push({ container: node, keys: undefined, index: 0, path });
      return true;
    }
    if (node !== null && typeof node === "object") {
      const keys = Object.keys(node);
      if (keys.length === 0) return line(`${path || "(root)"}: {}`);
      stack.push({ container: node as Record<string, unknown>, keys, index: 0, path });
      return true;
    }
    const shown = typeof node === "string" ? node : JSON.stringify(node);
    return line(path ? `${path}: ${shown}` : shown);
  };
  if (!visit(root, rootPath)) return false;
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    const size = frame.keys ? frame.keys.length : (frame.container as unknown[]).length;
    if (frame.index >= size) {
      stack.pop();
      continue;
    }
    const i = frame.index++;
    const key = frame.keys?.[i];
    const ok =
      key === undefined
        ? visit((frame.container as unknown[])[i], `${frame.path}[${i}]`)
        : visit((frame.container as Record<string, unknown>)[key], frame.path ? `${frame.path}.${key}` : key);
    if (!ok) return false;
  }
  return true;
}

/**
 * JSON as `key.path: value` lines (`items[2].name: Ada`), one paragraph per element of the
 * top-level array or object, so that each value keeps the names that give it meaning. JSON over
 * `jsonOverLimits` is an error (the upload check refuses it first).
 */
export function jsonToText(json: string, limit = Infinity): ExtractedText {
  const over = jsonOverLimits(json);
  if (over) throw new Error(`its JSON ${over}, over a document's limit`);
  const value: unknown = JSON.parse(json);
  const out = new BoundedText(limit);
  if (value !== null && typeof value === "object") {
    const container = value as JsonContainer;
    const keys = Array.isArray(container) ? undefined : Object.keys(container);
    const count = keys ? keys.length : (container as unknown[]).length;
    for (let paragraph = 0; paragraph < count; paragraph++) {
      let lines = 0;
      const line = (text: string) => out.add(lines++ > 0 ? "\n" : paragraph > 0 ? "\n\n" : "") && out.add(text);
      const key = keys?.[paragraph];
      const done =
        key === undefined
          ? walkJson((container as unknown[])[paragraph], `[${paragraph}]`, line)
          : walkJson((container as Record<string, unknown>)[key], key, line);
      if (!done) break;
    }
  } else {
    walkJson(value, "", (text) => out.add(text));
  }
  return out.result();
}

/** What reading one document may take (limits.ts); tests lower them. */
export interface ExtractLimits {
  maxTextChars: number;
  maxStreamBytes: number;
  maxPdfPages: number;
}

const EXTRACT_LIMITS: ExtractLimits = { maxTextChars: MAX_TEXT_CHARS, maxStreamBytes: MAX_PDF_STREAM_BYTES, maxPdfPages: MAX_PDF_PAGES };

/**
 * The document's readable text, at most `maxTextChars` characters (`cut` says when a limit cut
 * it); throws `ExtractionError` when the file is broken or has no text. A PDF is read only in the
 * knowledge worker thread, each of its streams decoding to at most `maxStreamBytes`.
 */
export async function extractText(kind: DocumentKind, bytes: Uint8Array, limits = EXTRACT_LIMITS): Promise<ExtractedText> {
  const limit = limits.maxTextChars;
  let extracted: ExtractedText;
  if (kind === "pdf") {
    const out = new BoundedText(limit);
    const pagesCut = await pdfToText(bytes, out, limits.maxStreamBytes, limits.maxPdfPages);
    extracted = out.result();
    if (pagesCut && !extracted.cut) extracted.cut = "pages";
  } else {
    const decoded = decodeText(bytes);
    if (decoded === undefined) throw new ExtractionError("The file is not UTF-8 text");
    try {
      if (kind === "csv") extracted = csvToText(decoded, limit);
      else if (kind === "json") extracted = jsonToText(decoded, limit);
      else {
        const out = new BoundedText(limit);
        out.add(decoded);
        extracted = out.result();
      }
    } catch (error) {
      throw new ExtractionError(`The file could not be read as .${kind}: ${(error as Error).message}`);
    }
  }
  const text = normalizeLineEnds(extracted.text).replace(/^\uFEFF/, "");
  if (!text.trim()) throw new ExtractionError("The document contains no text");
  return { text, cut: extracted.cut };
}
