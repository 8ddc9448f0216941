import type { Config } from "../../config.ts";
import { ProviderUnavailableError } from "../errors.ts";
import { LocalImages } from "./local.ts";
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
export async function createImages(config: Config): Promise<ImageProvider> {
  if (config.images.provider === "off") return off;
  if (config.images.provider !== "openai") return new LocalImages();
  const { OpenAIImages } = await import("./openai.ts");
  return new OpenAIImages(config.images, config.llm);
}
