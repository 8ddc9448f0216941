import { join } from "node:path";
import type { Command } from "commander";
import { CliError } from "../errors.ts";
import { examples } from "../help.ts";

/**
 * db move: the embedded default's database into PostgreSQL, for a deployment that outgrows one
 * machine (docs/operations.md, "Running on several machines"). The server's own commands (serve,
 * migrate) stay in server.ts; this one works on the data dir with no server running.
 */
export function registerDbCommands(program: Command): void {
  const group = program.command("db").description("Work on the service's database itself (with the server stopped)");

  group
    .command("move")
    .description("Copy every row of the embedded database (PERSONA_DATA_DIR) into an empty PostgreSQL database with pgvector, and verify it table by table")
    .requiredOption("--to <url>", "the empty PostgreSQL database: postgres://user:password@host:5432/name")
    .addHelpText(
      "after",
      "\nThe server must be stopped. The data dir is only read: it stays as it was, and the service can go back to it.\n" +
        "Image files stay where they are (PERSONA_DATA_DIR/blobs, or the S3 bucket): start the service with the same PERSONA_DATA_DIR.\n" +
        examples(["persona db move --to postgres://persona:secret@db.example.com:5432/persona", "PERSONA_DATA_DIR=/srv/persona persona db move --to postgres://persona@127.0.0.1/persona --json"]),
    )
    .action(async (options: { to: string }, command: Command) => {
      const json = Boolean(command.optsWithGlobals().json);
      const { loadConfig } = await import("../../server/toolkit/config.ts");
      const config = loadConfig();
      if (config.databaseUrl) throw new CliError("DATABASE_URL is set: `persona db move` copies the embedded database (PERSONA_DATA_DIR); unset DATABASE_URL and name the target with --to");
      if (config.embeddedDbInMemory) throw new CliError("EMBEDDED_DB_IN_MEMORY is set: an in-memory database keeps nothing to move");
      if (!/^postgres(ql)?:\/\//.test(options.to)) throw new CliError(`--to must be a postgres:// URL, not ${JSON.stringify(options.to)}`);
      const { moveEmbeddedDatabase, redactUrl } = await import("../internals/db-move.ts");
      const dbDir = join(config.dataDir, "db");
      const result = await moveEmbeddedDatabase(dbDir, options.to, (line) => process.stderr.write(`${line}\n`));
      const url = redactUrl(options.to);
      const blobs =
        config.blobStore === "s3" ? `image files stay in the S3 bucket ${config.s3.bucket}`
        : config.blobStore === "local" ? `image files stay in ${join(config.dataDir, "blobs")}: start the service with the same PERSONA_DATA_DIR (or copy them to where it will run)`
        : "no image files (BLOB_STORE=memory)";
      if (json) {
        process.stdout.write(`${JSON.stringify({ database_url: url, data_dir: dbDir, rows: result.rows, sequences: result.sequences, tables: result.tables, target_only_tables: result.targetOnly, blobs })}\n`);
        return;
      }
      process.stdout.write(
        `Moved ${result.rows} rows in ${result.tables.length} tables (and ${result.sequences} sequences) from ${dbDir} to ${url}; every table's row count and hash match.\n` +
          `${dbDir} is left as it was. ${blobs[0]!.toUpperCase()}${blobs.slice(1)}.\n` +
          `Start the service on PostgreSQL with:\n  DATABASE_URL=${url}${url === options.to ? "" : "   (your password in place of ***)"}\n`,
      );
    });
}
