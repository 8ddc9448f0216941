import type { Knex } from "knex";
import * as foundation from "./0001_foundation.ts";

/**
 * Every migration, in order. Listed here rather than discovered on disk so that they load the same
 * way under Node's type stripping, vitest and a bundler.
 */
const migrations: Record<string, Knex.Migration> = {
  "0001_foundation": foundation,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};
