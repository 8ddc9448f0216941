import type { Config } from "../../config.ts";
import type { Logger } from "../../logger.ts";
import { ProviderUnavailableError } from "../errors.ts";
import { LocalImages } from "./local.ts";
import type { ImageProvider } from "./types.ts";
import { traceImages } from "../../tracing/media.ts";

export type { ImageProvider } from "./types.ts";

/** Image generation switched off (`IMAGES_PROVIDER=off`). */
const off: ImageProvider = {
  name: "off",
  generate: async () => {
    throw new ProviderUnavailableError("Image generation is switched off on this server (IMAGES_PROVIDER=off)");
  },
};

/** The configured image provider: offline (the default), an OpenAI-compatible API, or none. */
export async function createImages(config: Config, log?: Logger): Promise<ImageProvider> {
  if (config.images.provider === "off") return off;
  // Its calls are spans while traces are on (tracing/media.ts).
  if (config.images.provider !== "openai") return traceImages(new LocalImages());
  const { OpenAIImages } = await import("./openai.ts");
  return traceImages(new OpenAIImages(config.images, config.llm, log));
}
