import { randomBytes } from "node:crypto";
import pg from "pg";

/** A fresh database on `server` (a PostgreSQL URL), for one bench run; `drop` removes it. */
export async function scratchDatabase(server: string, label: string): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  const name = `persona_bench_${label}_${randomBytes(4).toString("hex")}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: server });
    await client.connect();
    await client.query(sql);
    await client.end();
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  return { url: url.toString(), name, drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/** BENCH_DATABASE_URL, which benches that need PostgreSQL make their scratch database on. */
export function benchServer(): string {
  const server = process.env.BENCH_DATABASE_URL;
  if (!server) throw new Error("set BENCH_DATABASE_URL to a PostgreSQL 15+ server with pgvector (a scratch database is made on it)");
  return server;
}
