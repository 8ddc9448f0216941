import { dropRunDatabases } from "./database.ts";

// Once per run, in vitest's main process: a worker's lent services are never closed by a file, so
// on PostgreSQL their databases are dropped here, when every worker is done.
export async function teardown(): Promise<void> {
  await dropRunDatabases();
}
