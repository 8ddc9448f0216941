import { ApiError } from "../http/errors.ts";
import { CsvError, parseCsv } from "./csv.ts";

/** DECISIONS.md: over 10 MB is 413; 10 MB is 10 MiB, as the contract's `size_bytes` maximum says. */
export const MAX_DOCUMENT_BYTES = 10 * 1024 * 1024;

export const KINDS = ["txt", "md", "csv", "json", "pdf"] as const;
export type DocumentKind = (typeof KINDS)[number];

const unsupported = (message: string) => new ApiError(415, "unsupported_media_type", message);
const emptyDocument = (message: string) => new ApiError(400, "invalid_request", message, { errors: [{ path: "/body/file", message: "is empty" }] });

/** The file name as stored: its last path segment (some clients send a path), at most 255 characters. */
export function cleanFilename(name: string): string {
  const base = name.split(/[\\/]/).pop()?.trim() ?? "";
  return [...(base || "document")].slice(0, 255).join("");
}

function extensionOf(filename: string): string {
  const dot = filename.lastIndexOf(".");
  return dot < 0 ? "" : filename.slice(dot + 1).toLowerCase();
}

const PDF_MAGIC = Buffer.from("%PDF-");
// Readers (pdf.js among them) find the header within the first kilobyte, after any junk bytes.
const PDF_HEADER_WINDOW = 1024;

/** Valid UTF-8 without NUL bytes (binary files saved under a text extension have them); a BOM is dropped. */
export function decodeText(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * The document's kind, checked by extension and by content: a PDF must carry the PDF header, text
 * kinds must be UTF-8 text, JSON must parse and CSV must be well-formed. Anything else is 415; a
 * file over the size limit is 413 before its content is looked at.
 */
export function checkUpload(filename: string, bytes: Uint8Array): DocumentKind {
  const extension = extensionOf(filename);
  if (!(KINDS as readonly string[]).includes(extension)) {
    throw unsupported(`Accepted documents are ${KINDS.map((kind) => `.${kind}`).join(", ")}; got ${extension ? `.${extension}` : "a file without an extension"}`);
  }
  if (bytes.length > MAX_DOCUMENT_BYTES) {
    throw new ApiError(413, "payload_too_large", `A document may have at most ${MAX_DOCUMENT_BYTES} bytes; this one has ${bytes.length}`);
  }
  // Nothing to index would fail in the background and hold a quota slot until deleted: refuse now.
  if (bytes.length === 0) throw emptyDocument("The file is empty");
  const kind = extension as DocumentKind;
  if (kind === "pdf") {
    if (Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, PDF_HEADER_WINDOW)).indexOf(PDF_MAGIC) < 0) {
      throw unsupported("The file is named .pdf but is not a PDF");
    }
    return kind;
  }
  const text = decodeText(bytes);
  if (text === undefined) throw unsupported(`The file is named .${kind} but is not UTF-8 text`);
  if (!text.trim()) throw emptyDocument("The file holds no text, only white space");
  if (kind === "json") {
    try {
      JSON.parse(text);
    } catch (error) {
      throw unsupported(`The file is named .json but is not valid JSON: ${(error as Error).message}`);
    }
  }
  if (kind === "csv") {
    try {
      parseCsv(text);
    } catch (error) {
      if (error instanceof CsvError) throw unsupported(`The file is named .csv but is not valid CSV: ${error.message}`);
      throw error;
    }
  }
  return kind;
}
