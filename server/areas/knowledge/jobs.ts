import type { Task, TaskList } from "graphile-worker";
import { v7 as uuidv7 } from "uuid";
import type { Services } from "../../toolkit/services.ts";
import { ExtractionError } from "./extracted.ts";
import { completeDocument, documentToProcess, failDocument, markStarted, type NewChunk } from "./store.ts";
import { chunkDocumentInThread } from "./threads.ts";

export const KNOWLEDGE_PROCESS_TASK = "knowledge_process";
/**
 * A failing embeddings provider is usually transient (rate limit, outage), so the job is retried
 * with graphile-worker's backoff (exp(attempt) seconds: about 30 minutes over 8 attempts); the
 * last failed attempt marks the document failed. A broken file is not retried: it fails at once.
 */
export const KNOWLEDGE_PROCESS_MAX_ATTEMPTS = 8;

export type ProcessOutcome = "ready" | "failed" | "gone";

/** Embeds the texts in batches of the configured size, one provider call at a time, in order. */
async function embedAll(services: Services, texts: string[]): Promise<number[][]> {
  const vectors: number[][] = [];
  const size = services.config.embeddings.batchSize;
  for (let i = 0; i < texts.length; i += size) {
    const result = await services.providers.embeddings.embed(texts.slice(i, i + size));
    vectors.push(...result.vectors);
  }
  return vectors;
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * Extracts, chunks and embeds a document, then stores its chunks and marks it ready in one
 * transaction. Reading and chunking run in a worker thread (issue 31): a file that cannot be read
 * within the per-document limits (limits.ts) fails at once with the reason; one over the text or
 * chunk limit is indexed in part, and its `truncation` says so. `lastAttempt`: a failure ends the
 * document `failed` instead of leaving it for a retry. A document deleted meanwhile is left alone
 * ("gone").
 */
export async function processDocument(services: Services, documentId: string, lastAttempt = true): Promise<ProcessOutcome> {
  const { knex } = services.db;
  const loaded = await documentToProcess(knex, documentId);
  if (!loaded) return "gone";
  await markStarted(knex, documentId, services.now());
  try {
    const { chunks, truncation, threadId } = await chunkDocumentInThread(loaded.document.kind, loaded.content);
    const vectors = await embedAll(services, chunks.map((chunk) => chunk.content));
    const rows: NewChunk[] = chunks.map((chunk, index) => ({
      id: uuidv7(),
      chunk_index: index,
      content: chunk.content,
      token_count: chunk.tokens,
      embedding: vectors[index]!,
    }));
    const stored = await completeDocument(knex, documentId, rows, truncation, services.now());
    if (stored) services.log.info({ documentId, chunks: rows.length, bytes: loaded.document.size_bytes, truncated: truncation !== null, thread: threadId }, "knowledge document ready");
    return stored ? "ready" : "gone";
  } catch (error) {
    if (error instanceof ExtractionError) {
      await failDocument(knex, documentId, error.message, services.now());
      return "failed";
    }
    if (!lastAttempt) throw error;
    await failDocument(knex, documentId, `Processing failed: ${message(error)}`, services.now());
    services.log.warn({ err: error, documentId }, "knowledge document failed on its last attempt");
    return "failed";
  }
}

export function knowledgeTasks(services: Services): TaskList {
  const process: Task = async (payload, helpers) => {
    const { documentId } = payload as { documentId: string };
    await processDocument(services, documentId, helpers.job.attempts >= helpers.job.max_attempts);
  };
  return { [KNOWLEDGE_PROCESS_TASK]: process };
}
