import fc from "fast-check";
import { casesOf, fixtureKey, type CaseContext, type FuzzRequest } from "./cases.ts";
import { operations, type FuzzOperation } from "./contract.ts";
import { errorCodeOf, problemsOf } from "./judge.ts";
import { send } from "./send.ts";
import type { Actor, World } from "./world.ts";

// Runs the fuzz cases of every operation (or one) against a running service and reports what broke
// the pass rule. The cases of an operation come from its own seed (the run's seed and its
// operationId), so `--op X --case N` with the run's seed replays case N exactly as it was sent.

export interface FuzzOptions {
  baseUrl: string;
  seed: number;
  /** Cases per operation. */
  budget: number;
  /** Only this operation. */
  only?: string | undefined;
  /** Only this case (with `only`): a replay. */
  caseIndex?: number | undefined;
  /** Stop an operation's cases after this long (the rest are counted as not run). */
  secondsPerOperation: number;
  bodyLimitBytes: number;
  /** Loopback URLs the service may be given. */
  urls: string[];
  /** Called when a batch may have destroyed the fixtures (a DELETE, an account change): returns the world to go on with. */
  refreshWorld: (op: FuzzOperation) => Promise<World>;
  world: World;
  log?: (line: string) => void;
}

export interface Finding {
  operationId: string;
  caseIndex: number;
  note: string;
  request: string;
  status: number | undefined;
  problems: string[];
}

export interface OperationStats {
  cases: number;
  notRun: number;
  statuses: Record<string, number>;
  ms: number;
}

export interface FuzzReport {
  seed: number;
  budget: number;
  findings: Finding[];
  stats: Record<string, OperationStats>;
  /** Operations that answered 501 not_implemented to a valid request. */
  notLive: string[];
  /** Path parameters the world had no fixture for (filled from the schema instead). */
  unfilled: string[];
}

/** A stable 32-bit hash, so an operation's seed does not depend on which others run. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export const operationSeed = (seed: number, operationId: string) => (seed ^ hash(operationId)) >>> 0;

export function replayCommand(seed: number, budget: number, operationId: string, caseIndex?: number): string {
  return `npm run fuzz -- --seed ${seed} --budget ${budget} --op ${operationId}${caseIndex === undefined ? "" : ` --case ${caseIndex}`}`;
}

function contextOf(world: World, urls: string[], bodyLimitBytes: number): CaseContext {
  const gen = (actor: Actor) => ({
    valuesFor: (name: string) => actor.values[name],
    url: fc.tuple(fc.constantFrom(...urls), fc.stringMatching(/^[a-z0-9]{0,12}$/)).map(([base, tail]) => `${base}${tail}`),
  });
  return {
    own: gen(world.a),
    other: gen(world.b),
    bodyLimitBytes,
    credentials: {
      own: world.a.user.auth,
      other: world.b.user.auth,
      revokedKey: world.a.revokedKey,
      unsignedJwt: world.a.unsignedJwt,
      foreignJwt: world.a.foreignJwt,
    },
  };
}

function summary(r: FuzzRequest): string {
  const body = r.body ? ` (${r.body.length} bytes${r.headers["content-type"] ? `, ${r.headers["content-type"]}` : ""})` : "";
  const path = r.path.length > 300 ? `${r.path.slice(0, 300)}…` : r.path;
  return `${r.method} ${path}${body}`;
}

/**
 * DELETE batches run last, the deepest paths first (a document before its persona), and the
 * account's own deletion very last, so each meets its fixture still there; the rest in contract order.
 */
function ordered(list: FuzzOperation[]): FuzzOperation[] {
  const rank = (op: FuzzOperation) => (op.method !== "DELETE" ? 0 : op.path === "/v1/auth/me" ? 100 : 50 - op.path.split("/").length);
  return [...list].sort((x, y) => rank(x) - rank(y));
}

export async function fuzz(options: FuzzOptions): Promise<FuzzReport> {
  const report: FuzzReport = { seed: options.seed, budget: options.budget, findings: [], stats: {}, notLive: [], unfilled: [] };
  const selected = options.only ? operations.filter((op) => op.operationId === options.only) : operations;
  if (!selected.length) throw new Error(`no operation ${options.only} in the contract`);
  let world = options.world;
  for (const op of ordered(selected)) {
    for (const p of op.parameters.filter((p) => p.in === "path")) {
      if (!world.a.values[fixtureKey(op.path, p.name)]) report.unfilled.push(`${op.operationId}.${p.name}`);
    }
    const cases = fc.sample(casesOf(op, contextOf(world, options.urls, options.bodyLimitBytes)), { seed: operationSeed(options.seed, op.operationId), numRuns: options.budget });
    const stats: OperationStats = { cases: 0, notRun: 0, statuses: {}, ms: 0 };
    const started = Date.now();
    let succeeded = false;
    for (const [index, request] of cases.entries()) {
      if (options.caseIndex !== undefined && index !== options.caseIndex) continue;
      if (Date.now() - started > options.secondsPerOperation * 1000) {
        stats.notRun++;
        continue;
      }
      stats.cases++;
      let status: number | undefined;
      let problems: string[];
      try {
        const answer = await send(options.baseUrl, request);
        status = answer.status;
        problems = problemsOf(op.operationId, answer);
        if (status < 300) succeeded = true;
        if (status === 501 && errorCodeOf(answer) === "not_implemented" && !report.notLive.includes(op.operationId)) report.notLive.push(op.operationId);
      } catch (error) {
        problems = [`no answer: ${(error as Error).message}`];
      }
      const key = String(status ?? "none");
      stats.statuses[key] = (stats.statuses[key] ?? 0) + 1;
      if (problems.length) {
        report.findings.push({ operationId: op.operationId, caseIndex: index, note: request.note, request: summary(request), status, problems });
        options.log?.(`FINDING ${op.operationId} #${index} -> ${status}: ${problems[0]} [${request.note.slice(0, 200)}]`);
      }
    }
    stats.ms = Date.now() - started;
    report.stats[op.operationId] = stats;
    // Only a deletion or an account operation can take away what the next operations need.
    const last = op === ordered(selected).at(-1);
    if (!last && succeeded && (op.method === "DELETE" || op.path.startsWith("/v1/auth/"))) world = await options.refreshWorld(op);
  }
  return report;
}

/** The report as text: the seed, what ran, and each finding with the command that replays it. */
export function formatReport(report: FuzzReport): string {
  const ops = Object.entries(report.stats);
  const cases = ops.reduce((n, [, s]) => n + s.cases, 0);
  const notRun = ops.reduce((n, [, s]) => n + s.notRun, 0);
  const statuses: Record<string, number> = {};
  for (const [, s] of ops) for (const [k, v] of Object.entries(s.statuses)) statuses[k] = (statuses[k] ?? 0) + v;
  const slowest = [...ops].sort((x, y) => y[1].ms - x[1].ms).slice(0, 5).map(([id, s]) => `${id} ${(s.ms / 1000).toFixed(1)} s`);
  const lines = [
    `fuzz: seed ${report.seed}, budget ${report.budget} per operation, ${ops.length} operations, ${cases} requests${notRun ? ` (${notRun} not run: time limit)` : ""}`,
    `  statuses: ${Object.entries(statuses).sort().map(([k, v]) => `${k}×${v}`).join(" ")}`,
    `  slowest: ${slowest.join(", ")}`,
  ];
  if (report.notLive.length) lines.push(`  not live (501 not_implemented): ${report.notLive.join(", ")}`);
  if (report.unfilled.length) lines.push(`  path parameters without a fixture: ${report.unfilled.join(", ")}`);
  if (!report.findings.length) lines.push("  no findings");
  else {
    lines.push(`  ${report.findings.length} findings:`);
    const byOp = new Map<string, Finding[]>();
    for (const f of report.findings) byOp.set(f.operationId, [...(byOp.get(f.operationId) ?? []), f]);
    for (const [id, list] of byOp) {
      lines.push(`  ${id}: ${list.length}`);
      for (const f of list.slice(0, 5)) {
        lines.push(`    #${f.caseIndex} ${f.request} -> ${f.status ?? "no answer"}`);
        lines.push(`      sent: ${f.note.slice(0, 400)}`);
        for (const p of f.problems.slice(0, 4)) lines.push(`      - ${p.slice(0, 400)}`);
        lines.push(`      replay: ${replayCommand(report.seed, report.budget, id, f.caseIndex)}`);
      }
    }
  }
  return lines.join("\n");
}
