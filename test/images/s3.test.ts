import { HeadObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { purgeDeletedAccounts } from "../support/account-data.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../server/toolkit/config.ts";
import { S3BlobStore } from "../../server/toolkit/providers/blobs/s3.ts";
import { UpstreamError } from "../../server/toolkit/providers/errors.ts";
import { startFakeS3, type FakeS3 } from "../fakes/s3-server.ts";
import { expectError } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";
import { fetchPng, generate, pathOf } from "./helpers.ts";

// The S3 blob store against a fake S3 on loopback: the store alone, then a whole service using it.
const BUCKET = "persona-test";
let s3: FakeS3;

beforeAll(async () => {
  s3 = await startFakeS3([BUCKET]);
});

afterAll(async () => {
  await s3?.close();
});

function store(options: { bucket?: string; maxAttempts?: number } = {}) {
  return new S3BlobStore({ bucket: BUCKET, region: "us-east-1", endpoint: s3.url, accessKeyId: "AKIDTEST", secretAccessKey: "secret-test", maxAttempts: 2, ...options });
}

describe("the S3 blob store", () => {
  it("puts an object with its content type path-style, signed with SigV4, and gets it back", async () => {
    const blobs = store();
    const bytes = new Uint8Array([137, 80, 78, 71, 1, 2, 3]);
    s3.requests.length = 0;
    await blobs.put("images/a1.png", { bytes, contentType: "image/png" });
    expect(s3.buckets.get(BUCKET)!.get("images/a1.png")).toEqual({ bytes: Buffer.from(bytes), contentType: "image/png" });
    const [request] = s3.requests;
    expect(request).toMatchObject({ method: "PUT", path: `/${BUCKET}/images/a1.png` });
    expect(request!.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDTEST\/\d{8}\/us-east-1\/s3\/aws4_request, SignedHeaders=[a-z0-9;-]+, Signature=[0-9a-f]{64}$/);
    const got = await blobs.get("images/a1.png");
    expect(got).toEqual({ bytes: new Uint8Array(bytes), contentType: "image/png" });
    expect(got!.bytes).toBeInstanceOf(Uint8Array);
    blobs.destroy();
  });

  it("overwrites on put, answers undefined for a missing key, and deletes idempotently", async () => {
    const blobs = store();
    await blobs.put("images/b.png", { bytes: new Uint8Array([1]), contentType: "image/png" });
    await blobs.put("images/b.png", { bytes: new Uint8Array([2, 2]), contentType: "image/png" });
    expect((await blobs.get("images/b.png"))!.bytes).toEqual(new Uint8Array([2, 2]));
    expect(await blobs.get("images/never.png")).toBeUndefined();
    await blobs.delete("images/b.png");
    expect(await blobs.get("images/b.png")).toBeUndefined();
    await blobs.delete("images/b.png");
    await blobs.delete("images/never.png");
    expect(s3.buckets.get(BUCKET)!.has("images/b.png")).toBe(false);
    blobs.destroy();
  });

  it("refuses a key that could climb out of its folder before asking S3", async () => {
    const blobs = store();
    s3.requests.length = 0;
    await expect(blobs.put("../etc/passwd", { bytes: new Uint8Array([1]), contentType: "text/plain" })).rejects.toThrow(/Invalid blob key/);
    await expect(blobs.get("images/../x.png")).rejects.toThrow(/Invalid blob key/);
    await expect(blobs.delete("/abs.png")).rejects.toThrow(/Invalid blob key/);
    expect(s3.requests).toEqual([]);
    blobs.destroy();
  });

  it("fails with an UpstreamError once the SDK's attempts are spent on 500 InternalError", async () => {
    const blobs = store({ maxAttempts: 2 });
    for (const call of [
      () => blobs.put("images/c.png", { bytes: new Uint8Array([1]), contentType: "image/png" }),
      () => blobs.get("images/c.png"),
      () => blobs.delete("images/c.png"),
    ]) {
      s3.requests.length = 0;
      s3.failNext("internal-error", 2);
      const error = await call().then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(UpstreamError);
      expect(error).toMatchObject({ status: 500, message: expect.stringContaining("InternalError") });
      expect(s3.requests).toHaveLength(2);
    }
    expect(s3.buckets.get(BUCKET)!.has("images/c.png")).toBe(false);
    blobs.destroy();
  });

  it("retries a 503 SlowDown, and fails with an UpstreamError when it lasts", async () => {
    const blobs = store({ maxAttempts: 2 });
    s3.failNext("slow-down", 1);
    await blobs.put("images/d.png", { bytes: new Uint8Array([4]), contentType: "image/png" });
    expect((await blobs.get("images/d.png"))!.bytes).toEqual(new Uint8Array([4]));
    s3.failNext("slow-down", 2);
    await expect(blobs.get("images/d.png")).rejects.toMatchObject({ name: "UpstreamError", status: 503 });
    blobs.destroy();
  });

  it("fails on a missing bucket rather than reporting a missing object", async () => {
    const blobs = store({ bucket: "no-such-bucket" });
    await expect(blobs.get("images/e.png")).rejects.toMatchObject({ name: "UpstreamError", status: 404 });
    await expect(blobs.delete("images/e.png")).rejects.toMatchObject({ name: "UpstreamError", status: 404 });
    blobs.destroy();
  });
});

describe("the fake S3", () => {
  it("answers HeadObject as S3 does: the object's headers, or a bare 404", async () => {
    const blobs = store();
    await blobs.put("images/head.png", { bytes: new Uint8Array([9, 9, 9]), contentType: "image/png" });
    blobs.destroy();
    const client = new S3Client({ region: "us-east-1", endpoint: s3.url, forcePathStyle: true, credentials: { accessKeyId: "AKIDTEST", secretAccessKey: "secret-test" }, maxAttempts: 1 });
    const head = await client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "images/head.png" }));
    expect(head).toMatchObject({ ContentType: "image/png", ContentLength: 3, ETag: expect.stringMatching(/^"[0-9a-f]{32}"$/) });
    await expect(client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "images/none.png" }))).rejects.toMatchObject({ name: "NotFound", $metadata: { httpStatusCode: 404 } });
    client.destroy();
  });
});

describe("S3 settings", () => {
  it("needs S3_BUCKET with BLOB_STORE=s3", () => {
    expect(() => loadConfig({ BLOB_STORE: "s3" })).toThrow(ConfigError);
    expect(() => loadConfig({ BLOB_STORE: "s3" })).toThrow(/S3_BUCKET/);
  });

  it("takes both keys or neither", () => {
    expect(() => loadConfig({ BLOB_STORE: "s3", S3_BUCKET: BUCKET, S3_ACCESS_KEY_ID: "AKID" })).toThrow(/S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY/);
    expect(loadConfig({ BLOB_STORE: "s3", S3_BUCKET: BUCKET }).s3).toEqual({ bucket: BUCKET, region: "us-east-1" });
  });

  it("refuses an endpoint that is not a URL", () => {
    expect(() => loadConfig({ BLOB_STORE: "s3", S3_BUCKET: BUCKET, S3_ENDPOINT: "minio:9000" })).toThrow(/S3_ENDPOINT/);
  });
});

describe("a service with BLOB_STORE=s3", () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({
      env: { BLOB_STORE: "s3", S3_BUCKET: BUCKET, S3_ENDPOINT: s3.url, S3_ACCESS_KEY_ID: "AKIDTEST", S3_SECRET_ACCESS_KEY: "secret-test", IMAGES_PROVIDER: "local", AUTO_AVATARS: "false" },
    });
  });

  afterAll(async () => {
    await service?.close();
  });

  const objectOf = (url: string) => s3.buckets.get(BUCKET)!.get(`images/${pathOf(url).split("/").pop()}`);

  it("keeps a generated image in the bucket and serves its bytes from the link", async () => {
    expect(service.services.providers.blobs.kind).toBe("s3");
    const alice = await registerUser(service);
    const response = await generate(service, alice.auth, { prompt: "A lighthouse at dusk" });
    const image = await response.json();
    expect(response.status, JSON.stringify(image)).toBe(200);
    const object = objectOf(image.url);
    expect(object?.contentType).toBe("image/png");
    const { bytes, png } = await fetchPng(service, image.url);
    expect(bytes.equals(object!.bytes)).toBe(true);
    expect([png.width, png.height]).toEqual([image.width, image.height]);
  });

  it("answers 502 upstream_error when S3 fails, for a generation and for a link", async () => {
    const alice = await registerUser(service);
    const image = await (await generate(service, alice.auth, { prompt: "A harbour" })).json();
    s3.failNext("internal-error", 3);
    await expectError(await service.fetch(pathOf(image.url)), 502, "upstream_error");
    expect((await service.fetch(pathOf(image.url))).status).toBe(200);
    const before = await service.services.db.knex("images").where({ user_id: alice.id });
    s3.failNext("internal-error", 3);
    await expectError(await generate(service, alice.auth, { prompt: "Another harbour" }), 502, "upstream_error");
    expect(await service.services.db.knex("images").where({ user_id: alice.id })).toEqual(before);
  });

  it("answers 404 for a link whose object is gone", async () => {
    const alice = await registerUser(service);
    const image = await (await generate(service, alice.auth, { prompt: "A fading photograph" })).json();
    s3.buckets.get(BUCKET)!.delete(`images/${pathOf(image.url).split("/").pop()}`);
    await expectError(await service.fetch(pathOf(image.url)), 404, "not_found");
  });

  it("deletes a purged account's objects from the bucket; other users' stay", async () => {
    const dave = await registerUser(service);
    const erin = await registerUser(service);
    const gone = await (await generate(service, dave.auth, { prompt: "Dave's picture" })).json();
    const kept = await (await generate(service, erin.auth, { prompt: "Erin's picture" })).json();
    expect(objectOf(gone.url)).toBeDefined();
    await service.services.db.knex("users").where({ id: dave.id }).update({ deleted_at: new Date(Date.now() - 31 * 24 * 3600 * 1000) });
    await purgeDeletedAccounts(service.services);
    expect(objectOf(gone.url)).toBeUndefined();
    await expectError(await service.fetch(pathOf(gone.url)), 404, "not_found");
    expect(objectOf(kept.url)).toBeDefined();
    expect((await service.fetch(pathOf(kept.url))).status).toBe(200);
  });
});
