import { describe, expect, it } from "vitest";
import { MAX_PDF_STREAM_BYTES } from "../../server/areas/knowledge/limits.ts";
import { chunkDocumentInThread } from "../../server/areas/knowledge/threads.ts";
import { pdfBomb } from "./helpers.ts";

// Issue 31 M7: a 399 kB PDF inflating to 400 MB made /healthz take 2.6 s and grew the process by
// 651 MB. Alone in its file, so that this process's peak memory is this test's.
const MB = 1024 * 1024;

describe("a PDF bomb", () => {
  it("fails with the stream limit named, without growing this process by hundreds of megabytes", async () => {
    const bomb = await pdfBomb(400 * MB);
    expect(bomb.length).toBeLessThan(500 * 1024);
    const peakBefore = process.resourceUsage().maxRSS * 1024;
    await expect(chunkDocumentInThread("pdf", bomb)).rejects.toThrow(
      `A stream of the PDF decodes to more than ${MAX_PDF_STREAM_BYTES} bytes (the limit per stream); the file is refused as a decompression bomb`,
    );
    // Without the bound: about 900 MB more (pdf.js inflates the whole stream, then copies it).
    const grown = process.resourceUsage().maxRSS * 1024 - peakBefore;
    expect(grown, `peak memory grew by ${Math.round(grown / MB)} MB`).toBeLessThan(250 * MB);
  });

  it("fails a PDF whose second page is a bomb, though its first page reads well", async () => {
    const bomb = await pdfBomb(64 * MB, "The first page is ordinary text.");
    await expect(chunkDocumentInThread("pdf", bomb)).rejects.toThrow(/decodes to more than/);
  });
});
