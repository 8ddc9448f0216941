import { checkKey, type StoredBlob, type BlobStore } from "./types.ts";

/** Blobs in this process's memory: for tests and throw-away demos (`EMBEDDED_DB_IN_MEMORY`). */
export class MemoryBlobStore implements BlobStore {
  readonly kind = "memory";
  readonly blobs = new Map<string, StoredBlob>();

  async put(key: string, blob: StoredBlob): Promise<void> {
    this.blobs.set(checkKey(key), { bytes: new Uint8Array(blob.bytes), contentType: blob.contentType });
  }

  async get(key: string): Promise<StoredBlob | undefined> {
    return this.blobs.get(checkKey(key));
  }

  async delete(key: string): Promise<void> {
    this.blobs.delete(checkKey(key));
  }
}
