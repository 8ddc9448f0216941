import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * A new embedded database starts from a template: the data dir of one that was created (initdb)
 * and migrated when the project was installed (`scripts/embedded-template.ts`, run by `npm
 * install`), kept in node_modules/.cache as a directory (copied into a new data dir on disk) and
 * as an uncompressed tar (loaded into an in-memory database, e.g. each test service's). Creating
 * and migrating a database costs seconds of WASM work; a copy costs a fraction of that, and
 * leaves nothing in the process's memory. The template holds the schema only: instance secrets
 * are made at the first start, never in it.
 *
 * Its name carries a digest of what shapes it (PGlite, pgvector and graphile-worker versions, every
 * migration file), so a template from before an upgrade or a new migration is never used: the
 * database is then created as before.
 */
const root = fileURLToPath(new URL("../../..", import.meta.url));
const migrationsDir = fileURLToPath(new URL("./migrations/", import.meta.url));
const SHAPING_PACKAGES = ["@electric-sql/pglite", "@electric-sql/pglite-pgvector", "graphile-worker"];

function packageVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(`${root}node_modules/${name}/package.json`, "utf8")) as { version: string }).version;
  } catch {
    return "unknown";
  }
}

export interface Template {
  /** A data dir to copy. */
  dir: string;
  /** The same as a tar, for PGlite's `loadDataDir`. */
  tar: string;
}

/** Where the template of the current code and packages is (or would be). */
export function templatePaths(): Template {
  const digest = createHash("sha256");
  for (const name of SHAPING_PACKAGES) digest.update(`${name}@${packageVersion(name)}\n`);
  for (const file of readdirSync(migrationsDir).sort()) digest.update(`${file}\n`).update(readFileSync(`${migrationsDir}${file}`));
  const base = `${root}node_modules/.cache/persona/embedded-template-${digest.digest("hex").slice(0, 16)}`;
  return { dir: base, tar: `${base}.tar` };
}

/** The current template, if `npm install` made one. */
export function currentTemplate(): Template | undefined {
  try {
    const paths = templatePaths();
    return existsSync(`${paths.dir}/PG_VERSION`) && existsSync(paths.tar) ? paths : undefined;
  } catch {
    return undefined; // no migrations dir to read (a bundle): create the database as before
  }
}
