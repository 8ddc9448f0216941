import { randomBytes, createHash } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A fake S3 on loopback, speaking the REST wire format the AWS SDK uses for PutObject, GetObject,
 * HeadObject and DeleteObject, path-style (`/bucket/key`), with S3's XML error bodies. Objects are
 * kept in memory. Signatures are not checked, but every request is recorded so a test can look at
 * its Authorization header.
 */

export interface StoredObject {
  bytes: Buffer;
  contentType: string;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
}

/** What the next requests answer instead: S3's 500 `InternalError` or 503 `SlowDown`. */
export type Failure = "internal-error" | "slow-down";

export interface FakeS3 {
  /** e.g. `http://127.0.0.1:1234`, for `S3_ENDPOINT`. */
  url: string;
  /** Objects by bucket, then key. */
  buckets: Map<string, Map<string, StoredObject>>;
  requests: RecordedRequest[];
  /** Answers the next `count` requests with `failure` (the SDK retries, so a call fails after `maxAttempts`). */
  failNext(failure: Failure, count?: number): void;
  close(): Promise<void>;
}

const FAILURES: Record<Failure, { status: number; code: string; message: string }> = {
  "internal-error": { status: 500, code: "InternalError", message: "We encountered an internal error. Please try again." },
  "slow-down": { status: 503, code: "SlowDown", message: "Please reduce your request rate." },
};

function escapeXml(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

function sendError(res: ServerResponse, method: string, status: number, code: string, message: string, resource: string, requestId: string): void {
  res.writeHead(status, { "content-type": "application/xml", "x-amz-request-id": requestId, "x-amz-id-2": requestId });
  // A HEAD answer has no body: the SDK knows the error by its status alone.
  if (method === "HEAD") return void res.end();
  res.end(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${escapeXml(message)}</Message>` +
      `<Resource>${escapeXml(resource)}</Resource><RequestId>${requestId}</RequestId><HostId>${requestId}</HostId></Error>`,
  );
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startFakeS3(bucketNames: string[] = ["persona-test"]): Promise<FakeS3> {
  const buckets = new Map(bucketNames.map((name) => [name, new Map<string, StoredObject>()]));
  const requests: RecordedRequest[] = [];
  const failures: Failure[] = [];

  const server = createServer(async (req, res) => {
    const requestId = randomBytes(8).toString("hex").toUpperCase();
    const url = new URL(req.url ?? "/", "http://s3.local");
    const method = req.method ?? "GET";
    requests.push({ method, path: url.pathname, headers: req.headers });
    const body = await readBody(req);
    const failure = failures.shift();
    if (failure) {
      const { status, code, message } = FAILURES[failure];
      return sendError(res, method, status, code, message, url.pathname, requestId);
    }
    const [, bucketName = "", ...keyParts] = url.pathname.split("/");
    const key = keyParts.map(decodeURIComponent).join("/");
    const bucket = buckets.get(decodeURIComponent(bucketName));
    if (!bucket) return sendError(res, method, 404, "NoSuchBucket", "The specified bucket does not exist", url.pathname, requestId);
    if (!key) return sendError(res, method, 501, "NotImplemented", "Only object operations are implemented", url.pathname, requestId);
    const etag = (bytes: Buffer) => `"${createHash("md5").update(bytes).digest("hex")}"`;

    if (method === "PUT") {
      const contentType = req.headers["content-type"] ?? "binary/octet-stream";
      bucket.set(key, { bytes: body, contentType });
      res.writeHead(200, { etag: etag(body), "x-amz-request-id": requestId });
      return void res.end();
    }
    if (method === "GET" || method === "HEAD") {
      const object = bucket.get(key);
      if (!object) return sendError(res, method, 404, "NoSuchKey", "The specified key does not exist.", url.pathname, requestId);
      res.writeHead(200, {
        "content-type": object.contentType,
        "content-length": String(object.bytes.byteLength),
        etag: etag(object.bytes),
        "last-modified": new Date().toUTCString(),
        "accept-ranges": "bytes",
        "x-amz-request-id": requestId,
      });
      return void res.end(method === "HEAD" ? undefined : object.bytes);
    }
    if (method === "DELETE") {
      // S3 answers 204 whether or not the key existed.
      bucket.delete(key);
      res.writeHead(204, { "x-amz-request-id": requestId });
      return void res.end();
    }
    sendError(res, method, 405, "MethodNotAllowed", "The specified method is not allowed against this resource.", url.pathname, requestId);
  });

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    buckets,
    requests,
    failNext(failure, count = 1) {
      for (let i = 0; i < count; i++) failures.push(failure);
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
