import { chmodSync, closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, renameSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { create, extract, replace } from "tar";
import { CliError } from "../errors.ts";

// A backup of the embedded default is one tar file (issue 34, item 10): a manifest, the database as
// PGlite's own data-dir archive, and the image files of the `local` blob store under `blobs/`. A
// backup made before that is the database archive alone (a gzip file), which restores as before.

/** Where the image files are kept (BLOB_STORE), as far as a backup is concerned. */
export type ImageStore = { kind: "local"; root: string } | { kind: "memory" } | { kind: "s3"; bucket: string };

/** What a backup says about the image files: carried (how many), or left out and why. */
export type ImagesInBackup = { included: true; files: number; bytes: number } | { included: false; reason: string };

interface Manifest {
  format: "persona-backup";
  version: 1;
  created_at: string;
  /** The entry holding the database (PGlite's `dumpDataDir` archive). */
  database: string;
  images: ImagesInBackup;
}

const MANIFEST = "persona-backup.json";
const DATABASE = "database.tar.gz";
/** The blob store's folder in the archive (and in PERSONA_DATA_DIR). */
const BLOBS = "blobs";

/** A file the local blob store is still writing (it writes `<name>.<random>.tmp`, then renames). */
const unfinished = (path: string) => path.endsWith(".tmp");

/** The image files a backup carries, or why it carries none. */
export function imagesOf(store: ImageStore): ImagesInBackup {
  if (store.kind === "s3") {
    return { included: false, reason: `the images are in the S3 bucket ${store.bucket} (BLOB_STORE=s3): back the bucket up with its provider's tools` };
  }
  if (store.kind === "memory") return { included: false, reason: "BLOB_STORE=memory keeps no image files across restarts" };
  let files = 0;
  let bytes = 0;
  if (existsSync(store.root)) {
    for (const entry of readdirSync(store.root, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || unfinished(entry.name)) continue;
      files++;
      bytes += statSync(join(entry.parentPath, entry.name)).size;
    }
  }
  return { included: true, files, bytes };
}

/** The path where a bundle's database archive is written before it is packed (in `staging`). */
export const databaseEntry = (staging: string) => join(staging, DATABASE);

/**
 * Packs `staging`'s database archive, a manifest and the local blob store's files into `file`
 * (written beside it, then renamed: an interrupted backup never leaves a truncated file).
 */
export async function writeBundle(file: string, staging: string, store: ImageStore): Promise<ImagesInBackup> {
  const images = imagesOf(store);
  const manifest: Manifest = { format: "persona-backup", version: 1, created_at: new Date().toISOString(), database: DATABASE, images };
  writeFileSync(join(staging, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
  const partial = `${file}.partial`;
  await create({ file: partial, cwd: staging, portable: true }, [MANIFEST, DATABASE]);
  chmodSync(partial, 0o600);
  if (store.kind === "local" && images.included && images.files > 0) {
    // Entries `blobs/images/<name>.png`, as the store keeps them under PERSONA_DATA_DIR.
    await replace({ file: partial, cwd: dirname(store.root), portable: true, filter: (path) => !unfinished(path) }, [basename(store.root)]);
  }
  renameSync(partial, file);
  return images;
}

/** Whether `file` is a backup made before backups carried image files: PGlite's archive alone (gzip). */
export function isDatabaseOnly(file: string): boolean {
  const head = Buffer.alloc(2);
  const fd = openSync(file, "r");
  try {
    readSync(fd, head, 0, 2, 0);
  } finally {
    closeSync(fd);
  }
  return head[0] === 0x1f && head[1] === 0x8b;
}

/**
 * Unpacks a bundle into `dir` (only its manifest, its database and files under `blobs/`: nothing
 * else, no links, nothing outside `dir`) and answers the database archive's bytes, what it says
 * about the images, and the unpacked blob folder (absent when it carries none).
 */
export async function readBundle(file: string, dir: string): Promise<{ database: ReturnType<typeof readFileSync>; images: ImagesInBackup; blobs: string | undefined }> {
  const wanted = (path: string, type: string | undefined) =>
    (path === MANIFEST || path === DATABASE || path === BLOBS || path === `${BLOBS}/` || path.startsWith(`${BLOBS}/`)) && (type === "File" || type === "Directory");
  try {
    await extract({ file, cwd: dir, strict: true, filter: (path, entry) => wanted(path, "type" in entry ? entry.type : undefined) });
  } catch (error) {
    throw new CliError(`${file} is not a backup this version can restore: ${error instanceof Error ? error.message : String(error)}`);
  }
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(join(dir, MANIFEST), "utf8")) as Manifest;
  } catch {
    throw new CliError(`${file} is not a backup this version can restore: it has no ${MANIFEST}`);
  }
  if (manifest.format !== "persona-backup" || manifest.version !== 1 || !existsSync(join(dir, DATABASE))) {
    throw new CliError(`${file} is not a backup this version can restore: its manifest is of another format or version`);
  }
  const blobs = join(dir, BLOBS);
  return { database: readFileSync(join(dir, DATABASE)), images: manifest.images, blobs: existsSync(blobs) ? blobs : undefined };
}
