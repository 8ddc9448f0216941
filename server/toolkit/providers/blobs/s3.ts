import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3Client, S3ServiceException } from "@aws-sdk/client-s3";
import { UpstreamError } from "../errors.ts";
import { checkKey, type BlobStore, type StoredBlob } from "./types.ts";

export interface S3Options {
  bucket: string;
  region: string;
  /** An S3-compatible service (MinIO, R2, ...); addressed path-style (`/bucket/key`), which they all accept. */
  endpoint?: string;
  /** Both or neither; neither takes the SDK's default chain (environment, profile, instance role). */
  accessKeyId?: string;
  secretAccessKey?: string;
  /** Attempts per call, the SDK's retries included (default 3). */
  maxAttempts?: number;
}

/**
 * Objects in an S3 bucket. A failure of the service is an `UpstreamError` (502 to the client, as a
 * failing image provider is); a missing key is `undefined`, and deleting one is no error.
 */
export class S3BlobStore implements BlobStore {
  readonly kind = "s3";
  readonly #client: S3Client;
  readonly #bucket: string;

  constructor(options: S3Options) {
    this.#bucket = options.bucket;
    this.#client = new S3Client({
      region: options.region,
      ...(options.endpoint ? { endpoint: options.endpoint, forcePathStyle: true } : {}),
      ...(options.accessKeyId && options.secretAccessKey
        ? { credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey } }
        : {}),
      maxAttempts: options.maxAttempts ?? 3,
      // The SDK waits forever by default; a stuck store must fail the request, not hold it.
      requestHandler: { connectionTimeout: 5_000, requestTimeout: 30_000 },
      // Checksums only where S3 requires them: several S3-compatible services reject the
      // trailing-checksum uploads the SDK sends by default.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
    });
  }

  async put(key: string, blob: StoredBlob): Promise<void> {
    const command = new PutObjectCommand({ Bucket: this.#bucket, Key: checkKey(key), Body: blob.bytes, ContentType: blob.contentType });
    await this.#send("put", () => this.#client.send(command));
  }

  async get(key: string): Promise<StoredBlob | undefined> {
    const command = new GetObjectCommand({ Bucket: this.#bucket, Key: checkKey(key) });
    return this.#send("get", async () => {
      try {
        const output = await this.#client.send(command);
        const bytes = output.Body ? await output.Body.transformToByteArray() : new Uint8Array();
        return { bytes, contentType: output.ContentType ?? "application/octet-stream" };
      } catch (error) {
        if (isMissing(error)) return undefined;
        throw error;
      }
    });
  }

  async delete(key: string): Promise<void> {
    const command = new DeleteObjectCommand({ Bucket: this.#bucket, Key: checkKey(key) });
    await this.#send("delete", async () => {
      try {
        await this.#client.send(command);
      } catch (error) {
        if (!isMissing(error)) throw error;
      }
    });
  }

  /** Closes the client's sockets. */
  destroy(): void {
    this.#client.destroy();
  }

  async #send<T>(operation: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      const status = error instanceof S3ServiceException ? error.$metadata.httpStatusCode : undefined;
      const name = error instanceof Error ? error.name : "error";
      throw new UpstreamError(`The blob store (S3) failed to ${operation} an object: ${name}${status ? ` (${status})` : ""}`, status, { cause: error });
    }
  }
}

/** No such object (a missing bucket is a misconfiguration, and fails). */
function isMissing(error: unknown): boolean {
  if (!(error instanceof S3ServiceException) || error.name === "NoSuchBucket") return false;
  return error.name === "NoSuchKey" || error.$metadata.httpStatusCode === 404;
}
