import { join } from "node:path";
import type { Command } from "commander";
import type { ImageStore } from "../internals/backup-bundle.ts";
import { examples } from "../help.ts";

/**
 * backup, restore: the embedded default's database and the `local` blob store's image files as one
 * file (the database as PGlite's data-dir archive). For PostgreSQL, pg_dump and pg_restore do this,
 * and the image files are copied on their own (docs/operations.md).
 */
export function registerBackupCommands(program: Command): void {
  const config = async () => (await import("../../server/toolkit/config.ts")).loadConfig();
  const dataDir = async () => `${(await config()).dataDir}/db`;
  const blobsDir = async () => join((await config()).dataDir, "blobs");
  /** Where the server keeps its image files (BLOB_STORE). */
  const imageStore = async (): Promise<ImageStore> => {
    const { blobStore, s3, dataDir } = await config();
    if (blobStore === "s3") return { kind: "s3", bucket: s3.bucket! };
    return blobStore === "memory" ? { kind: "memory" } : { kind: "local", root: join(dataDir, "blobs") };
  };
  const progress = (line: string) => process.stderr.write(`${line}\n`);
  const refusePostgres = async () => {
    const { CliError } = await import("../errors.ts");
    if ((await config()).databaseUrl) {
      throw new CliError(
        "DATABASE_URL is set: back up PostgreSQL with pg_dump and restore with pg_restore, and copy the image files (PERSONA_DATA_DIR/blobs, or the S3 bucket) with them (docs/operations.md)",
      );
    }
  };

  program
    .command("backup <file>")
    .description("Back up the embedded database and the image files (PERSONA_DATA_DIR) into one file, taken by the running server if one holds it")
    .addHelpText("after", examples(["persona backup persona-2026-11-23.tar", "PERSONA_DATA_DIR=/srv/persona persona backup /backups/persona.tar"]))
    .action(async (file: string, _options: unknown, command: Command) => {
      await refusePostgres();
      const { backupDataDir } = await import("../internals/embedded-backup.ts");
      const result = await backupDataDir(await dataDir(), file, progress, await imageStore());
      if (command.optsWithGlobals().json) process.stdout.write(`${JSON.stringify({ file, bytes: result.bytes, online: result.online, images: result.images })}\n`);
    });

  program
    .command("restore <file>")
    .description("Restore the embedded database and the image files (PERSONA_DATA_DIR) from a backup; the server must be stopped")
    .option("--force", "replace a database that is already there")
    .addHelpText("after", examples(["persona restore persona-2026-11-23.tar", "persona restore --force persona-2026-11-23.tar"]))
    .action(async (file: string, options: { force?: boolean }, command: Command) => {
      await refusePostgres();
      const { restoreDataDir } = await import("../internals/embedded-backup.ts");
      const dir = await dataDir();
      const { images } = await restoreDataDir(dir, file, Boolean(options.force), progress, await blobsDir());
      const store = (await imageStore()).kind;
      if (images.included && store !== "local") progress(`BLOB_STORE is ${store}: the server reads its images from there, not from these files`);
      if (command.optsWithGlobals().json) process.stdout.write(`${JSON.stringify({ file, restored: dir, images })}\n`);
    });
}
