import { APIPromise } from "../api-promise.ts";
import { init, settle, unwrapBody } from "../core.ts";
import { GeneratedVoice } from "../generated/resources.ts";
import type { RequestBody, RequestOptions, ResponseOf } from "../types.ts";
import { uploadForm, type Uploadable, type UploadOptions } from "../upload.ts";

/**
 * Speech.
 *
 * @example
 * const mp3 = await client.voice.tts({ text: "Hello there", voice_id: "nova" });
 * await writeFile("hello.mp3", mp3);
 * const { text, language } = await client.voice.stt("./question.wav");
 */
export class Voice extends GeneratedVoice {
  /**
   * Speaks `text` as MP3: the whole file as bytes, or with `{ stream: true }` a ReadableStream that
   * can be piped on while it arrives.
   * @example
   * const bytes = await client.voice.tts({ text: "Hi" });
   * const stream = await client.voice.tts({ text: "Hi" }, { stream: true });
   * await stream.pipeTo(Writable.toWeb(createWriteStream("hi.mp3")));
   */
  tts(body: RequestBody<"voice_tts">, options?: RequestOptions & { stream?: false }): APIPromise<Uint8Array>;
  tts(body: RequestBody<"voice_tts">, options: RequestOptions & { stream: true }): APIPromise<ReadableStream<Uint8Array>>;
  tts(body: RequestBody<"voice_tts">, options: RequestOptions & { stream?: boolean } = {}): APIPromise<Uint8Array | ReadableStream<Uint8Array>> {
    return unwrapBody(this.core.raw.POST("/v1/voice/tts", { body, parseAs: options.stream ? "stream" : "arrayBuffer", ...init(options) }), (data) =>
      data instanceof ArrayBuffer ? new Uint8Array(data) : (data as ReadableStream<Uint8Array>),
    );
  }

  /**
   * Transcribes an mp3, wav, ogg or webm recording (at most 25 MB) and detects its language. The
   * service checks the file name and the content, so give a file name with the right extension
   * when sending bytes. A server without a speech-to-text provider answers 503 provider_unavailable.
   * @param audio a Blob or File, bytes (Buffer, Uint8Array, ArrayBuffer), or in Node a filesystem path
   * @example
   * const heard = await client.voice.stt(await readFile("q.webm"), { filename: "q.webm" });
   * console.log(heard.text, heard.language, heard.confidence);
   */
  stt(audio: Uploadable, options: UploadOptions & RequestOptions = {}): APIPromise<ResponseOf<"voice_stt">> {
    return new APIPromise(
      uploadForm(audio, options, "audio").then((form) =>
        this.core.raw
          .POST("/v1/voice/stt", {
            // The contract types the part as a string; the form carries it as a Blob with its file name.
            body: form as unknown as RequestBody<"voice_stt">,
            bodySerializer: (body: unknown) => body,
            ...init(options),
          })
          .then(settle),
      ),
    );
  }
}
