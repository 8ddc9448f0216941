// Issue 31 (H1, M7, M8): what processing one knowledge document may cost. Documented in
// docs/operations.md; the document's detail says when a limit cut it (`truncated`, `truncation`).

/**
 * Characters of text taken from one document: as many as the largest text upload has bytes, so a
 * .txt or .md file is never cut by it; it bounds what CSV, JSON and PDF expand into (a CSV of
 * `a,a,a,…` becomes `a: a` lines, 2.5 times its size).
 */
export const MAX_TEXT_CHARS = 10 * 1024 * 1024;

/**
 * Chunks stored for one document, each embedded and kept with its vector (about 10 kB in the
 * database with its index entries). 10 MB of English prose makes 3,200 to 4,800 chunks (measured:
 * synthetic prose, this repository's docs), so 2,000 chunks index its first 4 to 6.5 MB; the rest
 * is left out and the document says so.
 */
export const MAX_CHUNKS = 2_000;

/**
 * Levels of objects and arrays in a JSON document: each value's line names its whole path, and a
 * file nested millions deep (10 MB of `[`) spent half a minute and the thread's memory on paths.
 * Deeper is refused at upload (415).
 */
export const MAX_JSON_DEPTH = 128;

/**
 * Values (array elements, object members) in a JSON document, checked before it is parsed: a
 * million values parse into at most about 125 MB of heap (measured; 10 MB of `{},` would be 3.5
 * million objects, over 200 MB). More is refused at upload (415).
 */
export const MAX_JSON_VALUES = 1_000_000;

/** Columns of a CSV document named by its header; further columns are `column N`. */
export const MAX_CSV_NAMED_COLUMNS = 10_000;

/**
 * Bytes one stream of a PDF may decode to (a page's content, a font, an object stream). Real pages
 * decode to kilobytes, fonts to a few megabytes; a 399 kB file of zeros deflated 1,000 to 1 decodes
 * to 400 MB (M7). Over this, the PDF fails.
 */
export const MAX_PDF_STREAM_BYTES = 32 * 1024 * 1024;

/** Pages of a PDF read: pdf.js keeps each page it opens. Past them, the document says it was cut. */
export const MAX_PDF_PAGES = 10_000;

/**
 * The heap of the worker thread that reads and chunks a document (resourceLimits). The limits
 * above keep every file well under it (measured peaks for 10 MB files: prose 80 MB, the tokenizer
 * being most of it; JSON of a million values 200 MB with the tokenizer; a CSV of 10 MB of commas
 * 100 MB): a thread is stopped at its limit only between JavaScript steps, and one native call
 * allocating past it (a parse, a join) aborts the whole process (nodejs/node#47224). Typed arrays
 * are outside this heap: the PDF decoders are bounded by `MAX_PDF_STREAM_BYTES`.
 */
export const PROCESS_THREAD_HEAP_MB = 384;

/** The heap of the thread that checks an upload's content (JSON.parse of a million values: 100 MB at most, measured). */
export const CHECK_THREAD_HEAP_MB = 256;

/** How long reading and chunking one document may take before its thread is stopped. */
export const PROCESS_THREAD_TIMEOUT_MS = 120_000;

/** How long checking an upload's content may take (10 MB of JSON or CSV: about a second). */
export const CHECK_THREAD_TIMEOUT_MS = 30_000;

/**
 * Threads of each kind (checks, processing) running at once in one process; more wait their turn.
 * One of each: with the heaps above, knowledge threads hold at most 256 + 384 MB, and a check
 * never waits behind a long document.
 */
export const THREADS_AT_ONCE = 1;
