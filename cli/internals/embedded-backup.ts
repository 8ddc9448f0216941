import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { openPglite } from "../../server/toolkit/db/pglite-open.ts";
import { CliError } from "../errors.ts";
import { databaseEntry, isDatabaseOnly, readBundle, writeBundle, type ImagesInBackup, type ImageStore } from "./backup-bundle.ts";

// Backup and restore of the embedded default: the database as PGlite's own data-dir archive
// (`dumpDataDir`, a gzipped tar of the PostgreSQL data directory) and the image files of the `local`
// blob store, in one file (backup-bundle.ts). A backup of a dir a server runs on is taken by that
// server (server/toolkit/db/online-backup.ts): only one process may open the dir, and a copy of its
// files under a running server would not be consistent. Image files are never changed once written,
// so they are copied after the database: every file its rows name is there. A restore needs the
// server stopped.

type Progress = (line: string) => void;

async function withLock<T>(dataDir: string, work: () => Promise<T>): Promise<T> {
  const { DataDirLock } = await import("../../server/toolkit/db/data-dir-lock.ts");
  const lock = DataDirLock.acquire(dataDir);
  if (!(lock instanceof DataDirLock)) {
    throw new CliError(
      `the embedded database in ${dataDir} is in use by process ${lock.pid}` +
        (lock.socket === undefined ? " (still starting: try again once it serves)" : ": stop the server first") +
        "; a PostgreSQL deployment is backed up and restored with pg_dump and pg_restore (docs/operations.md)",
    );
  }
  try {
    return await work();
  } finally {
    lock.release();
  }
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** The progress line about the image files of a backup or a restore. */
function describeImages(images: ImagesInBackup, verb: string, where: string): string {
  return images.included ? `${verb} ${images.files} image file${images.files === 1 ? "" : "s"} (${mb(images.bytes)}) ${where}` : `no image files: ${images.reason}`;
}

/**
 * Backs up the database in `dataDir` and the image files of `images` (the `local` blob store's
 * folder; an S3 bucket or the memory store is named as left out) into one file.
 */
export async function backupDataDir(dataDir: string, file: string, progress: Progress, images: ImageStore): Promise<{ bytes: number; online: boolean; images: ImagesInBackup }> {
  if (!existsSync(join(dataDir, "PG_VERSION"))) throw new CliError(`no embedded database in ${dataDir} (PERSONA_DATA_DIR); nothing to back up`);
  // The pieces are gathered beside the target (the same file system, so the last rename is atomic).
  const staging = mkdtempSync(join(dirname(resolve(file)), ".persona-backup-"));
  try {
    const started = Date.now();
    const { online, heldMs } = await backupDatabase(dataDir, databaseEntry(staging), progress);
    const carried = await writeBundle(file, staging, images);
    progress(describeImages(carried, "with", images.kind === "local" ? `from ${images.root}` : ""));
    const bytes = statSync(file).size;
    const held = online ? `; the server's requests waited ${(heldMs / 1000).toFixed(1)} s while its database was read` : "";
    progress(`wrote ${mb(bytes)} to ${file} in ${((Date.now() - started) / 1000).toFixed(1)} s${held}`);
    return { bytes, online, images: carried };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** The database's archive into `file`: taken by the running server if one holds the dir, else by this process. */
async function backupDatabase(dataDir: string, file: string, progress: Progress): Promise<{ online: boolean; heldMs: number }> {
  const { liveHolder } = await import("../../server/toolkit/db/data-dir-lock.ts");
  const holder = liveHolder(dataDir);
  if (holder?.backup) {
    const started = Date.now();
    progress(`asking the running server (process ${holder.pid}) for a consistent archive of ${dataDir}`);
    const { fetchOnlineBackup } = await import("../../server/toolkit/db/online-backup.ts");
    const { bytes, heldMs } = await fetchOnlineBackup(holder.backup, file).catch((error: unknown) => {
      throw new CliError(`the running server (process ${holder.pid}) could not back up ${dataDir}: ${error instanceof Error ? error.message : String(error)}`);
    });
    progress(`archived the database (${mb(bytes)}) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return { online: true, heldMs };
  }
  return withLock(dataDir, async () => {
    const started = Date.now();
    progress(`opening ${dataDir}`);
    const db = await openPglite(dataDir);
    try {
      progress("checkpoint and archive");
      await db.exec("CHECKPOINT");
      const archive = await db.dumpDataDir("gzip");
      const bytes = Buffer.from(await archive.arrayBuffer());
      writeFileSync(file, bytes, { mode: 0o600 });
      progress(`archived the database (${mb(bytes.length)}) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      return { online: false, heldMs: 0 };
    } finally {
      await db.close();
    }
  });
}

const nonEmpty = (dir: string) => existsSync(dir) && readdirSync(dir).length > 0;

/**
 * Restores the database into `dataDir` and the backup's image files into `blobsDir` (the `local`
 * blob store's folder, PERSONA_DATA_DIR/blobs), replacing what is there with `--force`. A backup
 * made before backups carried image files restores the database and leaves `blobsDir` alone.
 */
export async function restoreDataDir(dataDir: string, file: string, force: boolean, progress: Progress, blobsDir: string): Promise<{ images: ImagesInBackup }> {
  if (!existsSync(file) || !statSync(file).isFile()) throw new CliError(`no backup file ${file}`);
  if (nonEmpty(dataDir) && !force) throw new CliError(`${dataDir} is not empty: pass --force to replace its database with the backup`);
  const databaseOnly = isDatabaseOnly(file);
  return withLock(dataDir, async () => {
    const started = Date.now();
    // Restored beside the target and swapped in at the end, so a failed restore keeps the old data.
    const staging = join(dirname(dataDir), `.restoring-${process.pid}`);
    const unpacked = join(dirname(dataDir), `.unpacking-${process.pid}`);
    for (const dir of [staging, unpacked]) {
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    }
    try {
      progress(`unpacking ${file} (${mb(statSync(file).size)})`);
      const bundle = databaseOnly ? undefined : await readBundle(file, unpacked);
      if (bundle?.images.included && nonEmpty(blobsDir) && !force) {
        throw new CliError(`${blobsDir} is not empty: pass --force to replace its image files with the backup's`);
      }
      try {
        const db = await openPglite(staging, new Blob([bundle ? bundle.database : readFileSync(file)]));
        await db.query("SELECT 1");
        await db.close();
      } catch (error) {
        throw new CliError(`${file} is not a backup this version can restore: ${error instanceof Error ? error.message : String(error)}`);
      }
      // Unpacked as the archive had them (PGlite's files are 0666): the owner's only before it goes in place (issue 31 M5).
      const { keepToOwner } = await import("../../server/toolkit/db/private-files.ts");
      keepToOwner(staging);
      rmSync(dataDir, { recursive: true, force: true });
      renameSync(staging, dataDir);
      progress(`restored the database into ${dataDir} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      if (!bundle) {
        const images: ImagesInBackup = { included: false, reason: `this backup holds the database only (made before backups carried image files); ${blobsDir} is left as it was` };
        progress(describeImages(images, "", ""));
        return { images };
      }
      if (bundle.images.included) {
        // The backup's files replace the folder's: the restored database names those, not the others.
        const files = bundle.blobs ?? join(unpacked, "blobs");
        mkdirSync(files, { recursive: true, mode: 0o700 });
        keepToOwner(files);
        const replaced = `${blobsDir}.replaced-${process.pid}`;
        if (existsSync(blobsDir)) renameSync(blobsDir, replaced);
        renameSync(files, blobsDir);
        rmSync(replaced, { recursive: true, force: true });
      }
      progress(describeImages(bundle.images, "restored", `into ${blobsDir}`));
      return { images: bundle.images };
    } finally {
      rmSync(staging, { recursive: true, force: true });
      rmSync(unpacked, { recursive: true, force: true });
    }
  });
}
