import { join } from "node:path";
import type { Config } from "../../config.ts";
import { LocalBlobStore } from "./local.ts";
import { MemoryBlobStore } from "./memory.ts";
import type { BlobStore } from "./types.ts";

export type { BlobStore } from "./types.ts";

/** The configured blob store: files under `PERSONA_DATA_DIR/blobs`, or memory. */
export function createBlobStore(config: Config): BlobStore {
  return config.blobStore === "memory" ? new MemoryBlobStore() : new LocalBlobStore(join(config.dataDir, "blobs"));
}
