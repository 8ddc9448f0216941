import type { Response } from "express";
import { missingMultipartField } from "../../toolkit/http/error-catalogue.ts";
import { HANDLED, type Handler, type HandlerMap } from "../../toolkit/http/router.ts";
import { consumeVoiceLimit } from "./limits.ts";
import { openSpeech, transcribe } from "./service.ts";

/** Aborted when the client goes away before the response is complete. */
function abortOnClose(res: Response): AbortSignal {
  const controller = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
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

/** The MP3 is streamed (chunked) as the provider produces it: the first sentence plays while the rest is synthesised. */
const voice_tts: Handler<"voice_tts"> = async ({ services, principal, body, res, log }) => {
  await consumeVoiceLimit(services, "voice_tts", principal.userId, res);
  const signal = abortOnClose(res);
  const { first, rest } = await openSpeech(services, body, signal);
  res.status(200).set({ "content-type": "audio/mpeg", "cache-control": "no-store" });
  try {
    let chunk: IteratorResult<Uint8Array> = { done: false, value: first };
    while (!chunk.done) {
      if (chunk.value.byteLength > 0 && !(await write(res, chunk.value))) {
        await rest.return?.();
        return HANDLED;
      }
      chunk = await rest.next();
    }
    res.end();
  } catch (error) {
    // Headers and audio are out: all that is left is to break the response, so the client sees it cut.
    if (!signal.aborted) log.warn({ err: error }, "speech synthesis failed mid-stream");
    res.destroy();
  }
  return HANDLED;
};

const voice_stt: Handler<"voice_stt"> = async ({ services, principal, req, res }) => {
  await consumeVoiceLimit(services, "voice_stt", principal.userId, res);
  const files = (req.files ?? []) as { fieldname: string; originalname: string; buffer: Buffer }[];
  const audio = files.find((file) => file.fieldname === "audio");
  if (!audio) throw missingMultipartField("audio");
  return { status: 200, body: await transcribe(services, audio, abortOnClose(res)) };
};

export const handlers = { voice_tts, voice_stt } satisfies Partial<HandlerMap>;
