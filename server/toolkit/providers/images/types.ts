import type { components } from "../../../../generated/openapi.d.ts";

export type ImageStyle = components["schemas"]["ImageStyle"];
export type AspectRatio = components["schemas"]["ImageAspectRatio"];

/** The contract's output sizes: the longer side is 1024 px. */
export const SIZES: Record<AspectRatio, { width: number; height: number }> = {
  "1:1": { width: 1024, height: 1024 },
  "16:9": { width: 1024, height: 576 },
  "9:16": { width: 576, height: 1024 },
  "4:3": { width: 1024, height: 768 },
};

export interface ImageRequest {
  /** 3 to 500 characters (the contract checked it). */
  prompt: string;
  style: ImageStyle;
  aspectRatio: AspectRatio;
  /** Scale of the output against the contract's size (automatic avatars are drawn at 0.5: 512x512). */
  scale?: number;
  signal?: AbortSignal;
}

export interface GeneratedImage {
  png: Uint8Array;
  width: number;
  height: number;
}

/**
 * An image provider: a PNG of exactly the requested size. Throws `UpstreamError` when a real
 * provider fails, `ProviderUnavailableError` when image generation is switched off.
 */
export interface ImageProvider {
  /** `openai`, `local` or `off`. */
  readonly name: string;
  generate(request: ImageRequest): Promise<GeneratedImage>;
}

export function sizeOf(request: Pick<ImageRequest, "aspectRatio" | "scale">): { width: number; height: number } {
  const { width, height } = SIZES[request.aspectRatio];
  const scale = request.scale ?? 1;
  return { width: Math.round(width * scale), height: Math.round(height * scale) };
}
