import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const SCRIPT = resolve(import.meta.dirname, "..", "..", "scripts/ci/pgbouncer.sh");

/** PgBouncer in transaction mode in front of the cluster's HAProxy primary port (scripts/ci/pgbouncer.sh). */
export interface FailoverPooler {
  /** The service's settings through it: DATABASE_URL at PgBouncer, LISTEN on HAProxy directly, DATABASE_POOLER=transaction. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * Starts PgBouncer on `port` pooling the primary that `clusterEnv.DATABASE_URL` (HAProxy) names, as
 * docs/operations.md lays the layers out: the service → PgBouncer → HAProxy → the Patroni leader,
 * with the notifications' session straight to HAProxy.
 */
export async function startFailoverPooler(clusterEnv: Record<string, string>, port: number): Promise<FailoverPooler> {
  const direct = new URL(clusterEnv.DATABASE_URL!);
  const env = { ...process.env, PGPORT: direct.port, PGBOUNCER_PORT: String(port) };
  await run("bash", [SCRIPT, "start"], { env }).catch((error: { stderr?: string; message: string }) => {
    throw new Error(`scripts/ci/pgbouncer.sh start failed: ${error.stderr ?? error.message}`);
  });
  const pooled = new URL(direct);
  pooled.port = String(port);
  return {
    env: { DATABASE_URL: pooled.toString(), DATABASE_LISTEN_URL: clusterEnv.DATABASE_LISTEN_URL ?? direct.toString(), DATABASE_POOLER: "transaction" },
    async stop() {
      await run("bash", [SCRIPT, "stop"], { env }).catch(() => undefined);
    },
  };
}
