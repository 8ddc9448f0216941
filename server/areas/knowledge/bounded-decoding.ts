import { isMainThread } from "node:worker_threads";

// Issue 31 M7: a PDF stream may not decode to more than a limit. pdf.js has no such option, and a
// worker thread's heap limit does not cover typed arrays (their bytes live outside the heap:
// measured, a 399 kB PDF made a thread capped at 128 MB grow the process by 900 MB). So while the
// knowledge worker thread reads a PDF, the allocation every decoder goes through is bounded:
//
// - pdf.js inflates a stream with the platform's DecompressionStream into one buffer of whatever
//   size it decodes to. Without DecompressionStream, pdf.js falls back to its own decoders (flate,
//   LZW, run-length, ASCII85/hex, decryption), which all grow their output with
//   `new Uint8Array(size)`, doubling it.
// - `Uint8Array` is wrapped so that asking for more than the limit throws. pdf.js may catch the
//   error and skip the stream, so the refusal is also recorded, and reading fails when any
//   allocation was refused.
//
// This changes globals of the thread it runs in: it refuses to run on the main thread, so that
// the API process never reads a PDF itself.

let limit: number | undefined;
let refused: number | undefined;

const Native = globalThis.Uint8Array;
const Bounded = new Proxy(Native, {
  construct(target, args: unknown[], newTarget) {
    const [length] = args;
    if (limit !== undefined && typeof length === "number" && length > limit) {
      refused = Math.max(refused ?? 0, length);
      throw new RangeError(`A decoded stream would take ${length} bytes, over the limit of ${limit}`);
    }
    return Reflect.construct(target, args, newTarget) as Uint8Array;
  },
});

/** Some decoder asked for more than the limit allows (the largest request is in `bytes`). */
export class DecodingRefused extends Error {
  override name = "DecodingRefused";
  readonly bytes: number;
  readonly limit: number;

  constructor(bytes: number, max: number) {
    super(`A decoded stream would take ${bytes} bytes, over the limit of ${max}`);
    this.bytes = bytes;
    this.limit = max;
  }
}

/** Throws on the main thread: the API process never reads a PDF itself. */
export function assertWorkerThread(): void {
  if (isMainThread) throw new Error("PDFs are read only in the knowledge worker thread, where decoding is bounded (issue 31 M7)");
}

/**
 * Runs `read` (which decodes with pdf.js) with every decoded buffer bounded to `maxBytes`. Throws
 * `DecodingRefused` when any allocation was refused, whatever `read` made of the refusal.
 */
export async function decodeBounded<T>(maxBytes: number, read: () => Promise<T>): Promise<T> {
  assertWorkerThread();
  Reflect.deleteProperty(globalThis, "DecompressionStream");
  limit = maxBytes;
  refused = undefined;
  globalThis.Uint8Array = Bounded;
  let value: T;
  try {
    value = await read();
  } catch (error) {
    if (refused !== undefined) throw new DecodingRefused(refused, maxBytes);
    throw error;
  } finally {
    globalThis.Uint8Array = Native;
    limit = undefined;
  }
  if (refused !== undefined) throw new DecodingRefused(refused, maxBytes);
  return value;
}
