import type { ImageProvider } from "../providers/images/types.ts";
import type { ModerationProvider } from "../providers/moderation/types.ts";
import type { SpeechProvider } from "../providers/speech/types.ts";
import { activeTracing } from "./active.ts";
import { annotateSpan, inSpan, readInSpan, spanOptions } from "./spans.ts";

// The calls to the speech, image and moderation providers as client spans (`speech <provider>`,
// `transcription <provider>`, `image <provider>`, `moderation <provider>`), as the model's and the
// embeddings' are (models.ts): which provider and what size of work, never the text, the audio or
// the picture. An OpenAI-compatible provider's HTTP call is the span's child. With traces off each
// hook hands back the provider it was given.

/** The speech provider seen through spans while traces are on. A synthesis's span runs from its first read to its last. */
export function traceSpeech(provider: SpeechProvider): SpeechProvider {
  const tracing = activeTracing();
  if (!tracing) return provider;
  const { api, tracer } = tracing;
  return {
    name: provider.name,
    transcribe: (recording, signal) =>
      inSpan({ name: `transcription ${provider.name}`, kind: "client", attributes: { "gen_ai.provider.name": provider.name, "persona.audio.bytes": recording.bytes.byteLength } }, async () => {
        const transcript = await provider.transcribe(recording, signal);
        annotateSpan({ "persona.transcript.characters": transcript.text.length });
        return transcript;
      }),
    synthesize: (request) => ({
      [Symbol.asyncIterator]: () => {
        const span = tracer.startSpan(`speech ${provider.name}`, spanOptions(tracing, { kind: "client", attributes: { "gen_ai.provider.name": provider.name, "persona.speech.voice": request.voice, "persona.speech.characters": request.text.length } }));
        const inside = api.trace.setSpan(api.context.active(), span);
        const chunks = api.context.with(inside, () => provider.synthesize(request)[Symbol.asyncIterator]());
        let bytes = 0;
        return readInSpan(tracing, span, inside, chunks, {
          onValue: (chunk) => void (bytes += chunk.byteLength),
          onEnd: () => span.setAttribute("persona.audio.bytes", bytes),
        });
      },
    }),
  };
}

/** The image provider seen through spans while traces are on. */
export function traceImages(provider: ImageProvider): ImageProvider {
  if (!activeTracing()) return provider;
  return {
    name: provider.name,
    generate: (request) =>
      inSpan({ name: `image ${provider.name}`, kind: "client", attributes: { "gen_ai.provider.name": provider.name, "persona.image.style": request.style, "persona.image.aspect_ratio": request.aspectRatio } }, async () => {
        const image = await provider.generate(request);
        annotateSpan({ "persona.image.width": image.width, "persona.image.height": image.height });
        return image;
      }),
  };
}

/** The moderation provider seen through spans while traces are on (none, which checks nothing, is left alone). */
export function traceModeration(provider: ModerationProvider): ModerationProvider {
  if (!activeTracing() || provider.name === "none") return provider;
  return {
    name: provider.name,
    check: (texts) =>
      inSpan({ name: `moderation ${provider.name}`, kind: "client", attributes: { "gen_ai.provider.name": provider.name, "persona.moderation.texts": texts.length } }, async () => {
        const verdict = await provider.check(texts);
        annotateSpan({ "persona.moderation.flagged": verdict.flagged });
        return verdict;
      }),
  };
}
