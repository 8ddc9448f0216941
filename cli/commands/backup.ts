import type { Command } from "commander";
import { examples } from "../help.ts";

/**
 * backup, restore: the embedded default's database as one file (PGlite's data-dir archive). For
 * PostgreSQL, pg_dump and pg_restore do this (docs/operations.md).
 */
export function registerBackupCommands(program: Command): void {
  const dataDir = async () => `${(await import("../../server/toolkit/config.ts")).loadConfig().dataDir}/db`;
  const progress = (line: string) => process.stderr.write(`${line}\n`);
  const refusePostgres = async () => {
    const { loadConfig } = await import("../../server/toolkit/config.ts");
    const { CliError } = await import("../errors.ts");
    if (loadConfig().databaseUrl) throw new CliError("DATABASE_URL is set: back up PostgreSQL with pg_dump and restore with pg_restore (docs/operations.md)");
  };

  program
    .command("backup <file>")
    .description("Back up the embedded database (PERSONA_DATA_DIR) into one file, taken by the running server if one holds it")
    .addHelpText("after", examples(["persona backup persona-2026-11-23.tar.gz", "PERSONA_DATA_DIR=/srv/persona persona backup /backups/persona.tar.gz"]))
    .action(async (file: string, _options: unknown, command: Command) => {
      await refusePostgres();
      const { backupDataDir } = await import("../internals/embedded-backup.ts");
      const result = await backupDataDir(await dataDir(), file, progress);
      if (command.optsWithGlobals().json) process.stdout.write(`${JSON.stringify({ file, bytes: result.bytes, online: result.online })}\n`);
    });

  program
    .command("restore <file>")
    .description("Restore the embedded database (PERSONA_DATA_DIR) from a backup; the server must be stopped")
    .option("--force", "replace a database that is already there")
    .addHelpText("after", examples(["persona restore persona-2026-11-23.tar.gz", "persona restore --force persona-2026-11-23.tar.gz"]))
    .action(async (file: string, options: { force?: boolean }, command: Command) => {
      await refusePostgres();
      const { restoreDataDir } = await import("../internals/embedded-backup.ts");
      const dir = await dataDir();
      await restoreDataDir(dir, file, Boolean(options.force), progress);
      if (command.optsWithGlobals().json) process.stdout.write(`${JSON.stringify({ file, restored: dir })}\n`);
    });
}
