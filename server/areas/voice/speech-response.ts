import type { Response } from "express";
import type { Logger } from "../../toolkit/logger.ts";
import { abortOnClose } from "../../toolkit/http/sse.ts";
import { openSpeech } from "./service.ts";

/**
 * Streams speech as an MP3 answer (chunked) as the provider produces it: the first sentence plays
 * while the rest is synthesised. Errors before the first audio are thrown (the caller's error
 * answer); after it, all that is left is to break the response, so the client sees it cut.
 */
export async function sendSpeech(services: Parameters<typeof openSpeech>[0], res: Response, request: Parameters<typeof openSpeech>[1], log: Logger): Promise<void> {
  const signal = abortOnClose(res);
  const { first, rest } = await openSpeech(services, request, signal);
  res.status(200).set({ "content-type": "audio/mpeg", "cache-control": "no-store" });
  try {
    let chunk: IteratorResult<Uint8Array> = { done: false, value: first };
    while (!chunk.done) {
      if (chunk.value.byteLength > 0 && !(await write(res, chunk.value))) {
        await rest.return?.();
        return;
      }
      chunk = await rest.next();
    }
    res.end();
  } catch (error) {
    if (!signal.aborted) log.warn({ err: error }, "speech synthesis failed mid-stream");
    res.destroy();
  }
}

/** Writes a chunk, waiting for the socket to drain when its buffer is full; false once the client left. */
async function write(res: Response, chunk: Uint8Array): Promise<boolean> {
  if (res.destroyed) return false;
  if (res.write(chunk)) return true;
  return new Promise((resolve) => {
    const done = (ok: boolean) => () => {
      res.off("drain", onDrain);
      res.off("close", onClose);
      resolve(ok);
    };
    const onDrain = done(true);
    const onClose = done(false);
    res.once("drain", onDrain);
    res.once("close", onClose);
  });
}
