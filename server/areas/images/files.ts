import { randomBytes } from "node:crypto";

/** The route images are served from (declared in spec/images.tsp as `images_file`). */
export const FILES_PATH = "/v1/images/files";

/** A year, and `immutable`: a name is never reused for other content. */
export const FILE_CACHE_CONTROL = "public, max-age=31536000, immutable";

/** 128 random bits: a link cannot be guessed, so it can go without a credential. */
export function newFileName(): string {
  return `${randomBytes(16).toString("hex")}.png`;
}

export function blobKey(fileName: string): string {
  return `images/${fileName}`;
}
