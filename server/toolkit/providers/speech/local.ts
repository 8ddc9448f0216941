import { FliteThread } from "./flite.ts";
import { ProviderUnavailableError } from "../errors.ts";
import type { Recording, SpeechProvider, SpeechRequest, Transcript } from "./types.ts";

/** Flite speaks long runs worse and later; a sentence longer than this is cut at a comma or space. */
const MAX_PIECE_CHARS = 300;

/** The text in sentence-sized pieces, so that the first audio leaves before the rest is synthesised. */
export function sentences(text: string): string[] {
  const segmenter = new Intl.Segmenter("en", { granularity: "sentence" });
  const pieces: string[] = [];
  for (const { segment } of segmenter.segment(text)) {
    let rest = segment.trim();
    while (rest.length > MAX_PIECE_CHARS) {
      const window = rest.slice(0, MAX_PIECE_CHARS);
      const cut = Math.max(window.lastIndexOf(", "), window.lastIndexOf("; "), window.lastIndexOf(" "));
      const at = cut > MAX_PIECE_CHARS / 3 ? cut + 1 : MAX_PIECE_CHARS;
      pieces.push(rest.slice(0, at).trim());
      rest = rest.slice(at).trim();
    }
    if (rest) pieces.push(rest);
  }
  return pieces;
}

/**
 * The offline default: Flite's voices (compiled to WebAssembly, BSD-style licence) in a worker
 * thread, MP3-encoded by lamejs, sentence by sentence. There is no offline speech recognition
 * worth offering, so `transcribe` says how to configure one.
 */
export class LocalSpeech implements SpeechProvider {
  readonly name = "local";
  readonly #thread = new FliteThread();

  async *synthesize(request: SpeechRequest): AsyncIterable<Uint8Array> {
    const pieces = sentences(request.text);
    // Nothing speakable (punctuation, emoji): still a valid MP3, of silence.
    if (pieces.length === 0) pieces.push("");
    const stream = this.#thread.newStream();
    let finished = false;
    try {
      for (const [index, text] of pieces.entries()) {
        request.signal?.throwIfAborted();
        const last = index === pieces.length - 1;
        const reply = await this.#thread.request({ op: "speak", stream, voice: request.voice, text, last });
        if (last) finished = true;
        if (reply.bytes.byteLength > 0) yield reply.bytes;
      }
    } finally {
      if (!finished) void this.#thread.request({ op: "cancel", stream }).catch(() => undefined);
    }
  }

  async transcribe(_recording: Recording): Promise<Transcript> {
    throw new ProviderUnavailableError(
      "No speech-to-text provider is configured; set SPEECH_PROVIDER=openai (with SPEECH_BASE_URL and SPEECH_API_KEY for a server of its own, else it uses OPENAI_BASE_URL and OPENAI_API_KEY)",
    );
  }

  close(): Promise<void> {
    return this.#thread.close();
  }
}
