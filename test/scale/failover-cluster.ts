import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const SCRIPT = resolve(import.meta.dirname, "..", "..", "scripts/ha/cluster.sh");

/** One PostgreSQL node of the cluster, as scripts/ha/cluster.sh names it. */
export interface HaNode {
  name: string;
  pgPort: number;
  restPort: number;
}

export type KillMode = "postmaster" | "node";

/** The Patroni cluster of scripts/ha/cluster.sh, as the failover scenario drives it. */
export interface HaCluster {
  /** The settings `start` printed: DATABASE_URL, DATABASE_LISTEN_URL, DATABASE_REPLICA_URLS. */
  env: Record<string, string>;
  dir: string;
  nodes: HaNode[];
  /** How long `start` took, in ms. */
  startMs: number;
  /** The leader's name, as Patroni's REST API says (undefined while there is none). */
  leader(): Promise<string | undefined>;
  /**
   * Kills the leader with SIGKILL: its postmaster (`postmaster`: Patroni, still running, sees its
   * PostgreSQL gone and hands over at once), or its postmaster and its Patroni (`node`: as if the
   * machine were lost; the leader key then lapses after the ttl). Resolves with what was killed, and when.
   */
  killPrimary(what?: KillMode): Promise<{ node: string; pid: number; at: number }>;
  stop(): Promise<void>;
}

/** Starts the cluster on ports from `portBase` (HA_PORT_BASE), or reuses one running there. */
export async function startHaCluster(portBase: number): Promise<HaCluster> {
  const env = { ...process.env, HA_PORT_BASE: String(portBase) };
  const started = performance.now();
  const { stdout } = await run("bash", [SCRIPT, "start"], { env, maxBuffer: 1 << 20 }).catch((error: { stderr?: string; message: string }) => {
    throw new Error(`scripts/ha/cluster.sh start failed: ${error.stderr ?? error.message}`);
  });
  const startMs = performance.now() - started;
  const settings: Record<string, string> = {};
  for (const line of stdout.split("\n")) {
    const match = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (match) settings[match[1]!] = match[2]!;
  }
  const nodes = (settings.HA_NODES ?? "").split(",").filter(Boolean).map((entry) => {
    const [name, pgPort, restPort] = entry.split(":");
    return { name: name!, pgPort: Number(pgPort), restPort: Number(restPort) };
  });
  const dir = settings.HA_DIR!;
  if (!dir || nodes.length === 0 || !settings.DATABASE_URL) throw new Error(`scripts/ha/cluster.sh start printed no settings:\n${stdout}`);
  const { HA_DIR: _dir, HA_NODES: _nodes, ...serviceEnv } = settings;

  const leader = async (): Promise<string | undefined> => {
    for (const node of nodes) {
      try {
        const response = await fetch(`http://127.0.0.1:${node.restPort}/cluster`, { signal: AbortSignal.timeout(2_000) });
        if (!response.ok) continue;
        const body = (await response.json()) as { members: { name: string; role: string; state: string }[] };
        return body.members.find((member) => member.role === "leader" && member.state === "running")?.name;
      } catch {
        // that node's Patroni is not answering: ask the next
      }
    }
    return undefined;
  };

  return {
    env: serviceEnv,
    dir,
    nodes,
    startMs,
    leader,
    async killPrimary(what = "postmaster") {
      const node = await leader();
      if (!node) throw new Error("the cluster has no leader to kill");
      // The first line of postmaster.pid is the postmaster's pid.
      const pid = Number(readFileSync(join(dir, node, "data", "postmaster.pid"), "utf8").split("\n")[0]);
      const patroni = Number(readFileSync(join(dir, node, "patroni.pid"), "utf8").trim());
      const at = performance.now();
      if (what === "node") process.kill(patroni, "SIGKILL");
      process.kill(pid, "SIGKILL");
      return { node, pid, at };
    },
    async stop() {
      await run("bash", [SCRIPT, "stop"], { env }).catch((error: { stderr?: string; message: string }) => {
        throw new Error(`scripts/ha/cluster.sh stop failed: ${error.stderr ?? error.message}`);
      });
    },
  };
}
