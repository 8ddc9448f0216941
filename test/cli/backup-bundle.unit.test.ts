import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "tar";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { databaseEntry, imagesOf, isDatabaseOnly, readBundle, writeBundle } from "../../cli/internals/backup-bundle.ts";
import { CliError } from "../../cli/errors.ts";

// The backup file of the embedded default (issue 34, item 10): the database archive, a manifest and
// the `local` blob store's image files in one tar; what it leaves out (an S3 bucket, the memory
// store) it says. Restoring unpacks only those entries: nothing else, no links, nothing outside.
let work: string;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "persona-bundle-"));
});
afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

const NAME = `${"a".repeat(32)}.png`;

function dataDirWithImages(name: string): { root: string; staging: string } {
  const root = join(work, name, "blobs");
  mkdirSync(join(root, "images"), { recursive: true });
  writeFileSync(join(root, "images", NAME), "png bytes");
  writeFileSync(join(root, "images", `${"b".repeat(32)}.png`), "more png bytes");
  // A file the store is still writing: never carried.
  writeFileSync(join(root, "images", `${NAME}.0a1b2c.tmp`), "half");
  const staging = join(work, name, "staging");
  mkdirSync(staging);
  writeFileSync(databaseEntry(staging), Buffer.from([0x1f, 0x8b, 1, 2, 3]));
  return { root, staging };
}

describe("the backup file", () => {
  it("carries the database and the local store's finished image files, and says how many", async () => {
    const { root, staging } = dataDirWithImages("local");
    const file = join(work, "local.tar");
    const images = await writeBundle(file, staging, { kind: "local", root });
    expect(images).toEqual({ included: true, files: 2, bytes: "png bytes".length + "more png bytes".length });
    expect(existsSync(`${file}.partial`)).toBe(false);
    expect(isDatabaseOnly(file)).toBe(false);

    const out = join(work, "local-out");
    mkdirSync(out);
    const read = await readBundle(file, out);
    expect([...read.database]).toEqual([0x1f, 0x8b, 1, 2, 3]);
    expect(read.images).toEqual(images);
    expect(readFileSync(join(read.blobs!, "images", NAME), "utf8")).toBe("png bytes");
    expect(readdirSync(join(read.blobs!, "images")).sort()).toEqual([NAME, `${"b".repeat(32)}.png`]);
  });

  it("says what it leaves out: an S3 bucket, the memory store", async () => {
    expect(imagesOf({ kind: "s3", bucket: "persona-images" })).toEqual({ included: false, reason: expect.stringContaining("S3 bucket persona-images") });
    expect(imagesOf({ kind: "memory" })).toEqual({ included: false, reason: expect.stringContaining("BLOB_STORE=memory") });
    expect(imagesOf({ kind: "local", root: join(work, "no-such-dir") })).toEqual({ included: true, files: 0, bytes: 0 });
    const { staging } = dataDirWithImages("s3");
    const file = join(work, "s3.tar");
    await writeBundle(file, staging, { kind: "s3", bucket: "persona-images" });
    const out = join(work, "s3-out");
    mkdirSync(out);
    const read = await readBundle(file, out);
    expect(read.images.included).toBe(false);
    expect(read.blobs).toBeUndefined();
  });

  it("tells a database-only backup (gzip) from a bundle", () => {
    const old = join(work, "old.tar.gz");
    writeFileSync(old, Buffer.from([0x1f, 0x8b, 8, 0]));
    expect(isDatabaseOnly(old)).toBe(true);
  });

  it("refuses a file that is not a backup, naming it", async () => {
    const junk = join(work, "junk.tar");
    writeFileSync(junk, "not a backup at all");
    const out = join(work, "junk-out");
    mkdirSync(out);
    const error = await readBundle(junk, out).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CliError);
    expect((error as Error).message).toContain("is not a backup this version can restore");
    // A tar of something else: no manifest.
    const other = join(work, "other");
    mkdirSync(other);
    writeFileSync(join(other, "notes.txt"), "hello");
    const tarOfOther = join(work, "other.tar");
    await create({ file: tarOfOther, cwd: other }, ["notes.txt"]);
    const out2 = join(work, "other-out");
    mkdirSync(out2);
    await expect(readBundle(tarOfOther, out2)).rejects.toThrow("persona-backup.json");
  });

  it("unpacks only its own entries: no other file, no link", async () => {
    const { root, staging } = dataDirWithImages("hostile");
    const file = join(work, "hostile.tar");
    await writeBundle(file, staging, { kind: "local", root });
    // Added to the archive afterwards: a stray file beside the manifest and a link under blobs/.
    const extra = join(work, "hostile", "extra");
    mkdirSync(join(extra, "blobs"), { recursive: true });
    writeFileSync(join(extra, "run-me.sh"), "#!/bin/sh\n");
    symlinkSync("/etc/passwd", join(extra, "blobs", "passwd"));
    const { replace } = await import("tar");
    await replace({ file, cwd: extra }, ["run-me.sh", "blobs/passwd"]);
    const out = join(work, "hostile-out");
    mkdirSync(out);
    const read = await readBundle(file, out);
    expect(existsSync(join(out, "run-me.sh"))).toBe(false);
    expect(existsSync(join(read.blobs!, "passwd"))).toBe(false);
    expect(readFileSync(join(read.blobs!, "images", NAME), "utf8")).toBe("png bytes");
  });
});
