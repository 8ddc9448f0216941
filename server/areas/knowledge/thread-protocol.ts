import type { Chunk } from "./chunk.ts";
import type { ContentProblem, DocumentKind } from "./content.ts";
import type { TextCut } from "./extracted.ts";

// What the API process and the knowledge worker threads (thread-main.ts) say to each other. Each
// reply names the thread that did the work (`threadId`: never the API's main thread, 0).

export interface CheckRequest {
  kind: DocumentKind;
  bytes: Uint8Array;
}

export interface CheckReply {
  problem: ContentProblem | null;
  threadId: number;
}

export interface ChunkRequest {
  kind: DocumentKind;
  bytes: Uint8Array;
  maxTextChars: number;
  maxChunks: number;
  maxStreamBytes: number;
  maxPdfPages: number;
}

export type ChunkReply =
  | { failure: string; threadId: number }
  | {
      chunks: Chunk[];
      /** The limit that cut the text (`maxTextChars`, or a PDF's pages); null: none. */
      textCut: TextCut | null;
      /** The text made more than `maxChunks` chunks; only the first `maxChunks` are here. */
      chunksTruncated: boolean;
      threadId: number;
    };
