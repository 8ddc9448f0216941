import { createWriteStream } from "node:fs";
import type { Writable } from "node:stream";
import { usageError } from "./errors.ts";

/** Where binary output goes: the file given, else stdout, but never a terminal (it would print noise). */
export function binarySink(output: string | undefined, what: string): Writable {
  if (output) return createWriteStream(output);
  if (process.stdout.isTTY) throw usageError(`${what} is binary: redirect stdout (> file) or give -o <file>`);
  return process.stdout;
}
