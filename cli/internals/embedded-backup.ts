import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { openPglite } from "../../server/toolkit/db/pglite-open.ts";
import { CliError } from "../errors.ts";

// Backup and restore of the embedded database (PGlite) as PGlite's own data-dir archive
// (`dumpDataDir`, a gzipped tar of the PostgreSQL data directory). A backup of a dir a server runs
// on is taken by that server (server/toolkit/db/online-backup.ts): only one process may open the dir, and a
// copy of its files under a running server would not be consistent. A restore needs it stopped.

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

export async function backupDataDir(dataDir: string, file: string, progress: Progress): Promise<{ bytes: number; online: boolean }> {
  if (!existsSync(join(dataDir, "PG_VERSION"))) throw new CliError(`no embedded database in ${dataDir} (PERSONA_DATA_DIR); nothing to back up`);
  const { liveHolder } = await import("../../server/toolkit/db/data-dir-lock.ts");
  const holder = liveHolder(dataDir);
  if (holder?.backup) {
    const started = Date.now();
    progress(`asking the running server (process ${holder.pid}) for a consistent archive of ${dataDir}`);
    const { fetchOnlineBackup } = await import("../../server/toolkit/db/online-backup.ts");
    const { bytes, heldMs } = await fetchOnlineBackup(holder.backup, file).catch((error: unknown) => {
      throw new CliError(`the running server (process ${holder.pid}) could not back up ${dataDir}: ${error instanceof Error ? error.message : String(error)}`);
    });
    progress(`wrote ${mb(bytes)} to ${file} in ${((Date.now() - started) / 1000).toFixed(1)} s; the server's requests waited ${(heldMs / 1000).toFixed(1)} s while it was read`);
    return { bytes, online: true };
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
      // Written beside the target, then renamed: an interrupted backup never leaves a truncated file.
      const partial = `${file}.partial`;
      writeFileSync(partial, bytes, { mode: 0o600 });
      renameSync(partial, file);
      progress(`wrote ${mb(bytes.length)} to ${file} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      return { bytes: bytes.length, online: false };
    } finally {
      await db.close();
    }
  });
}

export async function restoreDataDir(dataDir: string, file: string, force: boolean, progress: Progress): Promise<void> {
  if (!existsSync(file) || !statSync(file).isFile()) throw new CliError(`no backup file ${file}`);
  const nonEmpty = existsSync(dataDir) && readdirSync(dataDir).length > 0;
  if (nonEmpty && !force) throw new CliError(`${dataDir} is not empty: pass --force to replace its database with the backup`);
  await withLock(dataDir, async () => {
    const started = Date.now();
    // Restored beside the target and swapped in at the end, so a failed restore keeps the old data.
    const staging = join(dirname(dataDir), `.restoring-${process.pid}`);
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { mode: 0o700 });
    progress(`unpacking ${file} (${mb(statSync(file).size)})`);
    try {
      const db = await openPglite(staging, new Blob([readFileSync(file)]));
      await db.query("SELECT 1");
      await db.close();
    } catch (error) {
      rmSync(staging, { recursive: true, force: true });
      throw new CliError(`${file} is not a backup this version can restore: ${error instanceof Error ? error.message : String(error)}`);
    }
    // Unpacked as the archive had them (PGlite's files are 0666): the owner's only before it goes in place (issue 31 M5).
    const { keepToOwner } = await import("../../server/toolkit/db/private-files.ts");
    keepToOwner(staging);
    rmSync(dataDir, { recursive: true, force: true });
    renameSync(staging, dataDir);
    progress(`restored into ${dataDir} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });
}
