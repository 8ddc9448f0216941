import type OpenAI from "openai";
import { APIUserAbortError } from "openai";
import type { Config } from "../../config.ts";
import type { Logger } from "../../logger.ts";
import { UpstreamError } from "../errors.ts";
import { abortError } from "../llm/types.ts";
import { openaiClient, providerFailures } from "../openai-client.ts";
import { downloadImageLink, providerIsLocal } from "./download.ts";
import { fitSvg, rasterize } from "./raster.ts";
import { sizeOf, type AspectRatio, type GeneratedImage, type ImageProvider, type ImageRequest, type ImageStyle } from "./types.ts";

const WHAT = "The image provider";

/** The contract's composition presets, said to the model. */
const FRAMING: Record<ImageStyle, string> = {
  avatar: "A portrait for a square profile picture: one subject, head and shoulders, centred, plain background. ",
  banner: "A wide landscape banner: panoramic composition, subject off-centre, room to the sides. ",
  scene: "",
};

/** The sizes each model family can draw nearest to the contract's ratio; the answer is then cropped and scaled to the contract's size. */
function upstreamSize(model: string, ratio: AspectRatio): string {
  if (model.startsWith("dall-e-2")) return "1024x1024";
  const wide = model.startsWith("dall-e-3") ? "1792x1024" : "1536x1024";
  const tall = model.startsWith("dall-e-3") ? "1024x1792" : "1024x1536";
  return { "1:1": "1024x1024", "16:9": wide, "4:3": wide, "9:16": tall }[ratio];
}

function isImage(bytes: Uint8Array): boolean {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return (
    b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) || // PNG
    (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) || // JPEG
    (b.toString("ascii", 0, 4) === "RIFF" && b.toString("ascii", 8, 12) === "WEBP")
  );
}

/** `images.generate` through the `openai` package; `b64_json` or a `url` to fetch, both accepted. */
export class OpenAIImages implements ImageProvider {
  readonly name = "openai";
  private readonly client: OpenAI;
  private readonly model: string;
  private readonly timeoutMs: number;
  private readonly localProvider: boolean;
  private readonly failure: (error: unknown) => UpstreamError;

  constructor(settings: Config["images"], llm: Config["llm"], log?: Logger) {
    this.failure = providerFailures("images", settings.baseUrl, log);
    this.model = settings.model;
    this.timeoutMs = llm.timeoutMs;
    this.localProvider = providerIsLocal(settings.baseUrl);
    this.client = openaiClient({ baseUrl: settings.baseUrl, apiKey: settings.apiKey, timeoutMs: llm.timeoutMs, maxRetries: llm.maxRetries });
  }

  async generate(request: ImageRequest): Promise<GeneratedImage> {
    const { width, height } = sizeOf(request);
    let bytes: Uint8Array;
    try {
      const response = await this.client.images.generate(
        {
          model: this.model,
          prompt: FRAMING[request.style] + request.prompt,
          n: 1,
          size: upstreamSize(this.model, request.aspectRatio) as never,
          // Only the DALL-E models take a format; GPT image models always answer base64.
          ...(this.model.startsWith("dall-e") ? { response_format: "b64_json" as const } : {}),
        },
        { signal: request.signal },
      );
      const item = response.data?.[0];
      if (item?.b64_json) bytes = Buffer.from(item.b64_json, "base64");
      else if (item?.url) bytes = await this.download(item.url, request.signal);
      else throw new UpstreamError(`${WHAT} answered no image`);
    } catch (error) {
      if (request.signal?.aborted || error instanceof APIUserAbortError) throw abortError(request.signal ?? new AbortController().signal);
      throw this.failure(error);
    }
    if (!isImage(bytes)) throw this.failure(new UpstreamError(`${WHAT} sent something that is not an image`));
    return { png: await rasterize(fitSvg(bytes, width, height), width), width, height };
  }

  private async download(url: string, signal: AbortSignal | undefined): Promise<Uint8Array> {
    return downloadImageLink(url, { allowPrivate: this.localProvider, timeoutMs: this.timeoutMs, signal });
  }
}
