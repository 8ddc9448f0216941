import { assertWorkerThread, decodeBounded, DecodingRefused } from "./bounded-decoding.ts";
import { BoundedText, ExtractionError } from "./extracted.ts";

/**
 * The PDF's text into `out`, page by page, one paragraph per page: a page's text items in order,
 * with a line break where pdf.js marks one. Stops at the first page past `out`'s limit, and after
 * `maxPages` pages (true: pages were left out). A stream that decodes to more than
 * `maxStreamBytes` fails the PDF as a decompression bomb (issue 31 M7); this runs only in the
 * knowledge worker thread (bounded-decoding.ts).
 */
export async function pdfToText(bytes: Uint8Array, out: BoundedText, maxStreamBytes: number, maxPages: number): Promise<boolean> {
  assertWorkerThread();
  try {
    return await decodeBounded(maxStreamBytes, () => readPages(bytes, out, maxPages));
  } catch (error) {
    if (error instanceof DecodingRefused) {
      throw new ExtractionError(
        `A stream of the PDF decodes to more than ${error.limit} bytes (the limit per stream); the file is refused as a decompression bomb`,
      );
    }
    if (error instanceof ExtractionError) throw error;
    throw new ExtractionError(`The PDF could not be read: ${(error as Error).message}`);
  }
}

/** What pdf.js streams of a page's text: text runs (`str`) and marked-content markers (no `str`). */
interface TextContentPart {
  items: ({ str?: string; hasEOL?: boolean } | { type: string })[];
}

async function readPages(bytes: Uint8Array, out: BoundedText, maxPages: number): Promise<boolean> {
  const { getDocumentProxy } = await import("unpdf");
  // pdf.js may detach the buffer it is given: hand it a copy.
  const pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
  try {
    let pages = 0;
    // pdf.js keeps every page it has opened: a file of a million empty pages would fill the heap.
    const last = Math.min(pdf.numPages, maxPages);
    for (let number = 1; number <= last && !out.full; number++) {
      const page = await pdf.getPage(number);
      // Read as pdf.js streams it, and no further than the text limit: a page of millions of tiny
      // text runs is never held whole.
      const pageText = new BoundedText(out.limit - out.length);
      const reader = (page.streamTextContent() as ReadableStream<TextContentPart>).getReader();
      for (let part = await reader.read(); !part.done; part = await reader.read()) {
        for (const item of part.value.items) {
          if ("str" in item && item.str != null) pageText.add(item.str + (item.hasEOL ? "\n" : ""));
        }
        if (pageText.full) {
          await reader.cancel();
          break;
        }
      }
      page.cleanup();
      const text = pageText.result().text.trim();
      if (!text) continue;
      if (pages++ > 0 && !out.add("\n\n")) break;
      out.add(text);
    }
    return pdf.numPages > last && !out.full;
  } finally {
    await pdf.loadingTask.destroy();
  }
}
