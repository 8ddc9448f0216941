import { rasterize } from "./raster.ts";
import { sizeOf, type GeneratedImage, type ImageProvider, type ImageRequest } from "./types.ts";

/** The offline default: deterministic procedural PNGs (DiceBear portraits, drawn landscapes). */
export class LocalImages implements ImageProvider {
  readonly name = "local";

  async generate(request: ImageRequest): Promise<GeneratedImage> {
    request.signal?.throwIfAborted();
    const { width, height } = sizeOf(request);
    // DiceBear's styles are loaded by the first image, not by every start.
    const { avatarSvg, sceneSvg } = await import("./procedural.ts");
    const svg = request.style === "avatar" ? avatarSvg(request.prompt, width, height) : sceneSvg(request.prompt, request.style, width, height);
    return { png: await rasterize(svg, width), width, height };
  }
}
