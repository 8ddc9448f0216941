import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { dirname, join } from "node:path";
import { checkKey, type StoredBlob, type BlobStore } from "./types.ts";

const TYPES: Record<string, string> = { png: "image/png", mp3: "audio/mpeg", json: "application/json" };

/**
 * Files under a directory (`PERSONA_DATA_DIR/blobs`). The content type follows the extension. A
 * file is written under a temporary name and renamed, so a reader never sees half of one.
 */
export class LocalBlobStore implements BlobStore {
  readonly kind = "local";
  readonly #root: string;

  constructor(root: string) {
    this.#root = root;
  }

  async put(key: string, blob: StoredBlob): Promise<void> {
    const path = join(this.#root, checkKey(key));
    await mkdir(dirname(path), { recursive: true });
    const temporary = `${path}.${randomBytes(6).toString("hex")}.tmp`;
    await writeFile(temporary, blob.bytes);
    await rename(temporary, path);
  }

  async get(key: string): Promise<StoredBlob | undefined> {
    try {
      const bytes = await readFile(join(this.#root, checkKey(key)));
      return { bytes, contentType: TYPES[key.split(".").pop() ?? ""] ?? "application/octet-stream" };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(join(this.#root, checkKey(key)), { force: true });
  }
}
