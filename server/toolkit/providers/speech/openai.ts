import type OpenAI from "openai";
import { APIUserAbortError, toFile } from "openai";
import type { Config } from "../../config.ts";
import type { Logger } from "../../logger.ts";
import type { UpstreamError } from "../errors.ts";
import { abortError } from "../llm/types.ts";
import { openaiClient, providerFailures } from "../openai-client.ts";
import { languageCode } from "./language.ts";
import type { Recording, SpeechProvider, SpeechRequest, Transcript } from "./types.ts";

interface Segment {
  start?: number;
  end?: number;
  avg_logprob?: number;
}

/**
 * How sure the recognizer is: the probability its tokens average per segment, exp(avg_logprob),
 * averaged over the segments weighted by their duration (equally when no segment has one). A
 * transcript without segments is certain when empty (nothing was heard) and scores 1 otherwise:
 * the provider gave no figure to doubt it by.
 */
export function confidenceOf(text: string, segments: Segment[] | undefined): number {
  const scored = (segments ?? []).filter((s) => typeof s.avg_logprob === "number" && Number.isFinite(s.avg_logprob));
  if (scored.length === 0) return text.trim() ? 1 : 0;
  const weights = scored.map((s) => Math.max(0, (s.end ?? 0) - (s.start ?? 0)));
  const total = weights.reduce((sum, w) => sum + w, 0);
  const mean = scored.reduce((sum, s, i) => sum + s.avg_logprob! * (total > 0 ? weights[i]! / total : 1 / scored.length), 0);
  return Math.min(1, Math.max(0, Math.exp(mean)));
}

/** Text to speech (`audio.speech`, streamed MP3) and speech to text (`verbose_json`) through the `openai` package. */
export class OpenAISpeech implements SpeechProvider {
  readonly name = "openai";
  private readonly client: OpenAI;
  private readonly ttsModel: string;
  private readonly sttModel: string;
  private readonly report: (error: unknown) => UpstreamError;

  constructor(settings: Config["speech"], llm: Config["llm"], log?: Logger) {
    this.report = providerFailures("speech", settings.baseUrl, log);
    this.ttsModel = settings.ttsModel;
    this.sttModel = settings.sttModel;
    this.client = openaiClient({ baseUrl: settings.baseUrl, apiKey: settings.apiKey, timeoutMs: llm.timeoutMs, maxRetries: llm.maxRetries });
  }

  async *synthesize(request: SpeechRequest): AsyncIterable<Uint8Array> {
    let body: ReadableStream<Uint8Array> | null;
    try {
      const response = await this.client.audio.speech.create(
        { model: this.ttsModel, voice: request.voice, input: request.text, response_format: "mp3" },
        { signal: request.signal },
      );
      body = response.body;
    } catch (error) {
      throw this.failure(error, request.signal);
    }
    if (!body) throw this.report(new Error("no body"));
    const reader = body.getReader();
    try {
      for (;;) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (error) {
          throw this.failure(error, request.signal);
        }
        if (chunk.done) return;
        if (chunk.value.byteLength > 0) yield chunk.value;
      }
    } finally {
      // A consumer that stops early (the client went away) must not leave the upstream open.
      await reader.cancel().catch(() => undefined);
    }
  }

  async transcribe(recording: Recording, signal?: AbortSignal): Promise<Transcript> {
    try {
      const file = await toFile(recording.bytes, recording.filename, { type: recording.mimeType });
      const result = await this.client.audio.transcriptions.create({ model: this.sttModel, file, response_format: "verbose_json" }, { signal });
      const text = (result.text ?? "").trim();
      return { text, confidence: confidenceOf(text, result.segments), language: languageCode(result.language) };
    } catch (error) {
      throw this.failure(error, signal);
    }
  }

  private failure(error: unknown, signal: AbortSignal | undefined): Error {
    if (signal?.aborted || error instanceof APIUserAbortError) return abortError(signal ?? new AbortController().signal);
    return this.report(error);
  }
}
