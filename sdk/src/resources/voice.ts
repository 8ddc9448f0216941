import { init, type Core } from "../core.ts";
import { errorFromResponse } from "../errors.ts";
import type { RequestBody, RequestOptions } from "../types.ts";

/**
 * Speech.
 *
 * @example
 * const mp3 = await client.voice.tts({ text: "Hello there", voice_id: "nova" });
 * await writeFile("hello.mp3", mp3);
 */
export class Voice {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * Speaks `text` as MP3: the whole file as bytes, or with `{ stream: true }` a ReadableStream that
   * can be piped on while it arrives.
   * @example
   * const bytes = await client.voice.tts({ text: "Hi" });
   * const stream = await client.voice.tts({ text: "Hi" }, { stream: true });
   * await stream.pipeTo(Writable.toWeb(createWriteStream("hi.mp3")));
   */
  tts(body: RequestBody<"voice_tts">, options?: RequestOptions & { stream?: false }): Promise<Uint8Array>;
  tts(body: RequestBody<"voice_tts">, options: RequestOptions & { stream: true }): Promise<ReadableStream<Uint8Array>>;
  async tts(body: RequestBody<"voice_tts">, options: RequestOptions & { stream?: boolean } = {}): Promise<Uint8Array | ReadableStream<Uint8Array>> {
    const { data, error, response } = await this.#core.raw.POST("/v1/voice/tts", {
      body,
      parseAs: options.stream ? "stream" : "arrayBuffer",
      ...init(options),
    });
    if (!response.ok || !data) throw errorFromResponse(response, error);
    return data instanceof ArrayBuffer ? new Uint8Array(data) : (data as ReadableStream<Uint8Array>);
  }
}
