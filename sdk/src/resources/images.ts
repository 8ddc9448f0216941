import type { APIPromise } from "../api-promise.ts";
import { init, unwrapBody } from "../core.ts";
import { GeneratedImages } from "../generated/resources.ts";
import type { RequestOptions } from "../types.ts";

/**
 * Generated images.
 *
 * @example
 * const image = await client.images.generate({ prompt: "A lighthouse at dusk", style: "banner", aspect_ratio: "16:9" });
 * const png = await client.images.download(image.url);
 */
export class Images extends GeneratedImages {
  /**
   * The PNG bytes behind an image link (links need no credential; this is a plain GET).
   * @example
   * await writeFile("owl.png", await client.images.download(image.url));
   */
  download(url: string, options: RequestOptions = {}): APIPromise<Uint8Array> {
    const name = new URL(url).pathname.split("/").pop() ?? "";
    return unwrapBody(
      this.core.raw.GET("/v1/images/files/{name}", { params: { path: { name } }, parseAs: "arrayBuffer", ...init(options) }),
      (data) => new Uint8Array(data as ArrayBuffer),
    );
  }
}
