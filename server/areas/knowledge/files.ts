import { invalidField, payloadTooLarge, unsupportedMediaType } from "../../toolkit/http/error-catalogue.ts";
import { KINDS, type ContentProblem, type DocumentKind } from "./content.ts";
import { checkContentInThread, ThreadFailure } from "./threads.ts";

/** DECISIONS.md: over 10 MB is 413; 10 MB is 10 MiB, as the contract's `size_bytes` maximum says. */
export const MAX_DOCUMENT_BYTES = 10 * 1024 * 1024;

const emptyDocument = (message: string) => invalidField("/body/file", "is empty", message);

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

/**
 * The document's kind by extension, with the checks that cost nothing whatever the file holds: a
 * known extension (else 415), the size (413, before the content is looked at), not empty (400), a
 * PDF header within the first KiB (415). The content of text kinds is checked by `checkUpload`.
 */
export function kindOfUpload(filename: string, bytes: Uint8Array): DocumentKind {
  const extension = extensionOf(filename);
  if (!(KINDS as readonly string[]).includes(extension)) {
    throw unsupportedMediaType(`Accepted documents are ${KINDS.map((kind) => `.${kind}`).join(", ")}; got ${extension ? `.${extension}` : "a file without an extension"}`);
  }
  if (bytes.length > MAX_DOCUMENT_BYTES) {
    throw payloadTooLarge(`A document may have at most ${MAX_DOCUMENT_BYTES} bytes; this one has ${bytes.length}`);
  }
  // Nothing to index would fail in the background and hold a quota slot until deleted: refuse now.
  if (bytes.length === 0) throw emptyDocument("The file is empty");
  const kind = extension as DocumentKind;
  if (kind === "pdf" && Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, PDF_HEADER_WINDOW)).indexOf(PDF_MAGIC) < 0) {
    throw unsupportedMediaType("The file is named .pdf but is not a PDF");
  }
  return kind;
}

/**
 * The document's kind, checked by extension and by content: a PDF must carry the PDF header, text
 * kinds must be UTF-8 text, JSON must parse and CSV must be well-formed. Anything else is 415; a
 * file over the size limit is 413 before its content is looked at, and so is one whose check needs
 * more memory or time than a check may have. The content is read in a worker thread (issue 31:
 * parsing 10 MB of JSON or CSV held the API's event loop for seconds).
 */
export async function checkUpload(filename: string, bytes: Uint8Array): Promise<DocumentKind> {
  const kind = kindOfUpload(filename, bytes);
  if (kind === "pdf") return kind;
  let problem: ContentProblem | undefined;
  try {
    ({ problem } = await checkContentInThread(kind, bytes));
  } catch (error) {
    // Only a file built to be costly needs more than a check's memory or time.
    if (error instanceof ThreadFailure) throw payloadTooLarge(error.message);
    throw error;
  }
  if (problem?.problem === "empty") throw emptyDocument(problem.message);
  if (problem) throw unsupportedMediaType(problem.message);
  return kind;
}
