import type { Config } from "../../config.ts";
import { ProviderUnavailableError } from "../unavailable.ts";
import { LocalImages } from "./local.ts";
import { OpenAIImages } from "./openai.ts";
import type { ImageProvider } from "./types.ts";

export type { ImageProvider } from "./types.ts";

/** Image generation switched off (`IMAGES_PROVIDER=off`). */
const off: ImageProvider = {
  name: "off",
  generate: async () => {
    throw new ProviderUnavailableError("Image generation is switched off on this server (IMAGES_PROVIDER=off)");
  },
};

/** The configured image provider. */
export function createImages(config: Config): ImageProvider {
  if (config.images.provider === "off") return off;
  return config.images.provider === "openai" ? new OpenAIImages(config.images, config.llm) : new LocalImages();
}
