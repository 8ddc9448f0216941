/** A stored object: its bytes and the content type to serve them with. */
export interface StoredBlob {
  bytes: Uint8Array;
  contentType: string;
}

/**
 * Where generated files (images) are kept, by key. Keys are `/`-separated names the caller makes
 * (random, never reused); `put` overwrites, `delete` of a missing key is no error.
 */
export interface BlobStore {
  /** `local` (files under the data directory), `memory` or `s3`. */
  readonly kind: string;
  put(key: string, blob: StoredBlob): Promise<void>;
  get(key: string): Promise<StoredBlob | undefined>;
  delete(key: string): Promise<void>;
}

/** Keys are made by the service, but a key that could climb out of its folder is refused all the same. */
export function checkKey(key: string): string {
  if (!/^[a-z0-9][a-z0-9._-]*(\/[a-z0-9][a-z0-9._-]*)*$/i.test(key) || key.includes("..")) throw new Error(`Invalid blob key: ${key}`);
  return key;
}
