// Runs in the knowledge worker threads (threads.ts): checks an upload's content, or reads a
// document and cuts it into chunks. Issue 31 H1/M7/M8: this work grows with the file and may be
// hostile, so it never runs on the API's event loop; the threads have a heap limit, each task a
// time limit, and PDF decoding is bounded. When a thread dies, the API process does not.
import { threadId } from "node:worker_threads";
import { chunksOf, type Chunk } from "./chunk.ts";
import { contentProblem } from "./content.ts";
import { extractText } from "./extract.ts";
import { ExtractionError } from "./extracted.ts";
import type { CheckReply, CheckRequest, ChunkReply, ChunkRequest } from "./thread-protocol.ts";

export function checkContent(request: CheckRequest): CheckReply {
  return { problem: contentProblem(request.kind, request.bytes) ?? null, threadId };
}

export async function chunkDocument(request: ChunkRequest): Promise<ChunkReply> {
  try {
    const { text, cut } = await extractText(request.kind, request.bytes, request);
    const chunks: Chunk[] = [];
    let chunksTruncated = false;
    // One chunk past the limit is made, to know that there is more; the rest of the text is not read.
    for (const chunk of chunksOf(text)) {
      if (chunks.length === request.maxChunks) {
        chunksTruncated = true;
        break;
      }
      chunks.push(chunk);
    }
    return { chunks, textCut: cut, chunksTruncated, threadId };
  } catch (error) {
    if (error instanceof ExtractionError) return { failure: error.message, threadId };
    throw error;
  }
}
