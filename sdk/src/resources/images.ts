import type { APIPromise } from "../api-promise.ts";
import { init, unwrap, unwrapBody, type Core } from "../core.ts";
import type { RequestBody, RequestOptions, ResponseOf } from "../types.ts";

/**
 * Generated images.
 *
 * @example
 * const image = await client.images.generate({ prompt: "A lighthouse at dusk", style: "banner", aspect_ratio: "16:9" });
 * const png = await client.images.download(image.url);
 */
export class Images {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * Generates a PNG from a prompt (3 to 500 characters). `style` frames it (avatar, banner, scene);
   * `aspect_ratio` alone sets its size (default 1:1, at most 1024x1024). Answers its link and size.
   * @example
   * const { url, width, height } = await client.images.generate({ prompt: "Portrait of a wise owl" });
   */
  generate(body: RequestBody<"images_generate">, options: RequestOptions = {}): APIPromise<ResponseOf<"images_generate">> {
    return unwrap(this.#core.raw.POST("/v1/images/generate", { body, ...init(options) }));
  }

  /**
   * The PNG bytes behind an image link (links need no credential; this is a plain GET).
   * @example
   * await writeFile("owl.png", await client.images.download(image.url));
   */
  download(url: string, options: RequestOptions = {}): APIPromise<Uint8Array> {
    const name = new URL(url).pathname.split("/").pop() ?? "";
    return unwrapBody(
      this.#core.raw.GET("/v1/images/files/{name}", { params: { path: { name } }, parseAs: "arrayBuffer", ...init(options) }),
      (data) => new Uint8Array(data as ArrayBuffer),
    );
  }
}
