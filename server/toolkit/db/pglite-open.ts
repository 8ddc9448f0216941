import type { PGlite } from "@electric-sql/pglite";

/**
 * The embedded database's files opened in this process, with the extensions the server loads
 * (pgvector, pg_trgm), for tools that work on a data dir no server holds: the CLI's backup and
 * restore, the install's template, tests. `loadDataDir` starts it from an archive instead.
 */
export async function openPglite(dataDir: string, loadDataDir?: Blob): Promise<PGlite> {
  const [{ PGlite }, { pg_trgm }, { vector }] = await Promise.all([
    import("@electric-sql/pglite"),
    import("@electric-sql/pglite/contrib/pg_trgm"),
    import("@electric-sql/pglite-pgvector"),
  ]);
  return PGlite.create({ dataDir, extensions: { vector, pg_trgm }, ...(loadDataDir ? { loadDataDir } : {}) });
}
