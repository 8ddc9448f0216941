import { Piscina } from "piscina";
import type { Chunk } from "./chunk.ts";
import type { ContentProblem, DocumentKind } from "./content.ts";
import { ExtractionError, type TextCut } from "./extracted.ts";
import {
  CHECK_THREAD_HEAP_MB,
  CHECK_THREAD_TIMEOUT_MS,
  MAX_CHUNKS,
  MAX_PDF_PAGES,
  MAX_PDF_STREAM_BYTES,
  MAX_TEXT_CHARS,
  PROCESS_THREAD_HEAP_MB,
  PROCESS_THREAD_TIMEOUT_MS,
  THREADS_AT_ONCE,
} from "./limits.ts";
import type { CheckReply, CheckRequest, ChunkReply, ChunkRequest } from "./thread-protocol.ts";

// Issue 31 H1/M7/M8: an upload's content check and a document's reading and chunking run in
// worker threads (thread-main.ts) with a heap limit, and each task with a time limit; the API's
// event loop only hands the bytes over and takes the reply. With WORKER_ENABLED=true the
// knowledge job runs inside the API process, so this is what keeps a hostile document from
// stalling or exhausting it. Threads are pooled (piscina): loading the tokenizer costs a thread
// a fraction of a second, so a thread serves document after document until it has been idle a
// while; one that runs out of memory or time is ended and replaced.

const THREAD_MAIN = new URL("./thread-main.ts", import.meta.url).href;
const IDLE_THREAD_MS = 30_000;
// The threads run at a lower priority than the API's (Linux nice, through piscina's optional
// @napi-rs/nice): on a busy machine, seconds of chunking must not take the CPU from the event loop.
const THREAD_NICENESS = 10;

/** Limits of one task and its thread; tests lower them. */
export interface ThreadLimits {
  heapMb: number;
  timeoutMs: number;
  maxTextChars: number;
  maxChunks: number;
  maxStreamBytes: number;
  maxPdfPages: number;
}

export const PROCESS_LIMITS: ThreadLimits = {
  heapMb: PROCESS_THREAD_HEAP_MB,
  timeoutMs: PROCESS_THREAD_TIMEOUT_MS,
  maxTextChars: MAX_TEXT_CHARS,
  maxChunks: MAX_CHUNKS,
  maxStreamBytes: MAX_PDF_STREAM_BYTES,
  maxPdfPages: MAX_PDF_PAGES,
};

export const CHECK_LIMITS: ThreadLimits = { ...PROCESS_LIMITS, heapMb: CHECK_THREAD_HEAP_MB, timeoutMs: CHECK_THREAD_TIMEOUT_MS };

/** The task's thread ended without a reply (memory, time, crash): why, in words for the document's `error`. */
export class ThreadFailure extends ExtractionError {
  override name = "ThreadFailure";
}

/** A first-come, first-served limit on tasks running at once: a task's time limit starts when it runs, not when it queues. */
class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number) {
    this.free = size;
  }

  async take(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

type TaskName = "checkContent" | "chunkDocument";

interface Pool {
  piscina: Piscina;
  slots: Slots;
}

// One pool per task and heap limit (checks need less memory than chunking; tests use their own).
const pools = new Map<string, Pool>();

function poolFor(task: TaskName, heapMb: number): Pool {
  const key = `${task}:${heapMb}`;
  let pool = pools.get(key);
  if (!pool) {
    const piscina = new Piscina({
      filename: THREAD_MAIN,
      name: task,
      minThreads: 0,
      maxThreads: THREADS_AT_ONCE,
      idleTimeout: IDLE_THREAD_MS,
      atomics: "disabled",
      resourceLimits: { maxOldGenerationSizeMb: heapMb },
      niceIncrement: THREAD_NICENESS,
    });
    // A thread that dies with no task on it is replaced on demand; its error has no one to tell.
    piscina.on("error", () => undefined);
    pool = { piscina, slots: new Slots(THREADS_AT_ONCE) };
    pools.set(key, pool);
  }
  return pool;
}

async function runInThread<R>(task: TaskName, request: CheckRequest | ChunkRequest, limits: ThreadLimits, transferList: ArrayBuffer[] = []): Promise<R> {
  const { piscina, slots } = poolFor(task, limits.heapMb);
  const doing = task === "checkContent" ? "Checking the file's content" : "Reading the document";
  await slots.take();
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), limits.timeoutMs);
  try {
    return (await piscina.run(request, { signal: deadline.signal, transferList })) as R;
  } catch (error) {
    if (deadline.signal.aborted) throw new ThreadFailure(`${doing} took longer than ${limits.timeoutMs / 1000} s (the limit per document)`);
    if ((error as NodeJS.ErrnoException).code === "ERR_WORKER_OUT_OF_MEMORY") {
      throw new ThreadFailure(`${doing} needed more than ${limits.heapMb} MB of memory (the limit per document)`);
    }
    throw new ThreadFailure(`${doing} failed: ${(error as Error).message}`);
  } finally {
    clearTimeout(timer);
    slots.give();
  }
}

/** An upload's content check: what is wrong with it (undefined: nothing), and the thread that looked. */
export interface ContentCheck {
  problem: ContentProblem | undefined;
  threadId: number;
}

/**
 * What is wrong with a text upload's content (UTF-8, blank, JSON, CSV), checked in a worker thread.
 * The bytes are copied to the thread (the upload stores them next). Throws `ThreadFailure` when the
 * check runs out of memory or time.
 */
export async function checkContentInThread(kind: DocumentKind, bytes: Uint8Array, limits = CHECK_LIMITS): Promise<ContentCheck> {
  const reply = await runInThread<CheckReply>("checkContent", { kind, bytes }, limits);
  return { problem: reply.problem ?? undefined, threadId: reply.threadId };
}

/** A document's chunks, and which limit cut it (null: none). */
export interface DocumentChunks {
  chunks: Chunk[];
  /** Why only part of the document was indexed, in words for the document's detail; null when whole. */
  truncation: string | null;
  /** The worker thread that did the work. */
  threadId: number;
}

/**
 * Reads a document and cuts it into chunks in a worker thread; `bytes` are handed over to it (the
 * caller must not use them afterwards). Throws `ExtractionError` when the
 * file cannot be read, and `ThreadFailure` (an ExtractionError) when the thread ran out of memory
 * or time or died: either way the document fails at once, with the reason.
 */
export async function chunkDocumentInThread(kind: DocumentKind, bytes: Uint8Array, limits = PROCESS_LIMITS): Promise<DocumentChunks> {
  const { maxTextChars, maxChunks, maxStreamBytes, maxPdfPages } = limits;
  // Bytes that fill their own buffer are moved to the thread, not copied (a copy of 10 MB is a few
  // milliseconds of the event loop); the caller does not use them again. Bytes that share a buffer
  // (a small Buffer from Node's pool) are copied.
  const transfer = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer ? [bytes.buffer] : [];
  const reply = await runInThread<ChunkReply>("chunkDocument", { kind, bytes, maxTextChars, maxChunks, maxStreamBytes, maxPdfPages }, limits, transfer);
  if ("failure" in reply) throw new ExtractionError(reply.failure);
  return { chunks: reply.chunks, truncation: truncationOf(reply, limits), threadId: reply.threadId };
}

function truncationOf(reply: { textCut: TextCut | null; chunksTruncated: boolean }, limits: ThreadLimits): string | null {
  // The chunk limit is reached before the end of the text that was taken, so it is the one that cut.
  if (reply.chunksTruncated) return `Only the first ${limits.maxChunks} chunks were indexed (the limit per document); the rest of the text was left out`;
  if (reply.textCut === "characters") return `Only the first ${limits.maxTextChars} characters of the document's text were indexed (the limit per document)`;
  if (reply.textCut === "pages") return `Only the first ${limits.maxPdfPages} pages of the PDF were read (the limit per document)`;
  return null;
}
