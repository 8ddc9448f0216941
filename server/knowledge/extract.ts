import { extractText as extractPdfText, getDocumentProxy } from "unpdf";
import { parseCsv } from "./csv.ts";
import { decodeText, type DocumentKind } from "./files.ts";

/** The document cannot be turned into text; processing ends `failed` with this message. */
export class ExtractionError extends Error {
  override name = "ExtractionError";
}

/** CSV as one paragraph per row of `header: value` lines, so a chunk boundary falls between rows. */
export function csvToText(text: string): string {
  const rows = parseCsv(text);
  if (rows.length === 0) return "";
  const header = rows[0]!.map((name, i) => name.trim() || `column ${i + 1}`);
  if (rows.length === 1) return header.join(", ");
  return rows
    .slice(1)
    .map((row) =>
      row
        .map((value, i) => [header[i] ?? `column ${i + 1}`, value.trim()] as const)
        .filter(([, value]) => value !== "")
        .map(([name, value]) => `${name}: ${value}`)
        .join("\n"),
    )
    .filter(Boolean)
    .join("\n\n");
}

/**
 * JSON as `key.path: value` lines (`items[2].name: Ada`), one paragraph per element of the
 * top-level array or object, so that each value keeps the names that give it meaning.
 */
export function jsonToText(text: string): string {
  const value: unknown = JSON.parse(text);
  const lines: string[] = [];
  const walk = (node: unknown, path: string) => {
    if (Array.isArray(node)) {
      if (node.length === 0) lines.push(`${path || "(root)"}: []`);
      node.forEach((item, i) => walk(item, `${path}[${i}]`));
    } else if (node !== null && typeof node === "object") {
      const entries = Object.entries(node);
      if (entries.length === 0) lines.push(`${path || "(root)"}: {}`);
      for (const [key, item] of entries) walk(item, path ? `${path}.${key}` : key);
    } else {
      const shown = typeof node === "string" ? node : JSON.stringify(node);
      lines.push(path ? `${path}: ${shown}` : shown);
    }
  };
  if (Array.isArray(value) || (value !== null && typeof value === "object")) {
    const entries: [string, unknown][] = Array.isArray(value) ? value.map((item, i) => [`[${i}]`, item]) : Object.entries(value);
    const paragraphs = entries.map(([key, item]) => {
      lines.length = 0;
      walk(item, key);
      return lines.join("\n");
    });
    return paragraphs.join("\n\n");
  }
  walk(value, "");
  return lines.join("\n");
}

async function pdfToText(bytes: Uint8Array): Promise<string> {
  try {
    // pdf.js may detach the buffer it is given: hand it a copy.
    const pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
    try {
      const { text } = await extractPdfText(pdf, { mergePages: false });
      return text.map((page) => page.trim()).filter(Boolean).join("\n\n");
    } finally {
      await pdf.loadingTask.destroy();
    }
  } catch (error) {
    throw new ExtractionError(`The PDF could not be read: ${(error as Error).message}`);
  }
}

/** The document's readable text; throws `ExtractionError` when the file is broken or has none. */
export async function extractText(kind: DocumentKind, bytes: Uint8Array): Promise<string> {
  let text: string;
  if (kind === "pdf") {
    text = await pdfToText(bytes);
  } else {
    const decoded = decodeText(bytes);
    if (decoded === undefined) throw new ExtractionError("The file is not UTF-8 text");
    try {
      text = kind === "csv" ? csvToText(decoded) : kind === "json" ? jsonToText(decoded) : decoded;
    } catch (error) {
      throw new ExtractionError(`The file could not be read as .${kind}: ${(error as Error).message}`);
    }
  }
  text = text.replace(/\r\n?/g, "\n").replace(/^\uFEFF/, "");
  if (!text.trim()) throw new ExtractionError("The document contains no text");
  return text;
}
