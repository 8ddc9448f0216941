import { join } from "node:path";
import type { Config } from "../../config.ts";
import { LocalBlobStore } from "./local.ts";
import { MemoryBlobStore } from "./memory.ts";
import type { BlobStore } from "./types.ts";

export type { BlobStore } from "./types.ts";

/** The configured blob store: files under `PERSONA_DATA_DIR/blobs`, memory, or an S3 bucket. */
export async function createBlobStore(config: Config): Promise<BlobStore> {
  switch (config.blobStore) {
    case "memory":
      return new MemoryBlobStore();
    case "s3": {
      const { S3BlobStore } = await import("./s3.ts");
      // loadConfig refuses `s3` without a bucket.
      return new S3BlobStore({ ...config.s3, bucket: config.s3.bucket! });
    }
    default:
      return new LocalBlobStore(join(config.dataDir, "blobs"));
  }
}
