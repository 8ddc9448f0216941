// Preloaded into a Persona child by `npm run bench:chat` (`node --import`): counts what the process
// asks of its database through `pg` (every connection: knex's, the pool's, graphile-worker's, the
// embedded default's socket alike), so a bench can give statements, round trips and transactions per
// request on both database kinds. `pg` sends each `query()` as one exchange (a simple query, or
// parse/bind/execute/sync), so a call is a round trip. On SIGUSR2 the counts are written to
// BENCH_STATEMENTS_FILE. Bench-only: the service never loads it.
import { writeFileSync } from "node:fs";
import { onEveryQuery } from "../../test/support/pg-queries.ts";

export interface StatementCounts {
  roundTrips: number;
  /** Round trips other than BEGIN, COMMIT, ROLLBACK, SAVEPOINT and RELEASE. */
  statements: number;
  /** BEGIN, plus every statement sent outside a transaction (its own implicit one). */
  transactions: number;
  /** Statements by their first keyword (select, insert, update, delete, with, ...). */
  byKind: Record<string, number>;
  /** With BENCH_STATEMENTS_TEXT set: statements by their first 120 characters, to see which they are. */
  byText?: Record<string, number>;
}

const counts: StatementCounts = { roundTrips: 0, statements: 0, transactions: 0, byKind: {}, ...(process.env.BENCH_STATEMENTS_TEXT ? { byText: {} } : {}) };
const inTransaction = new WeakSet<object>();
const CONTROL = /^(begin|start|commit|end|rollback|savepoint|release)\b/;

onEveryQuery((client, whole) => {
  const text = whole.trimStart().slice(0, 16).toLowerCase();
  const keyword = /^[a-z]+/.exec(text)?.[0] ?? "other";
  counts.roundTrips++;
  if (CONTROL.test(text)) {
    if (keyword === "begin" || keyword === "start") {
      counts.transactions++;
      inTransaction.add(client);
    } else if (keyword !== "savepoint" && keyword !== "release" && !text.startsWith("rollback to")) {
      inTransaction.delete(client);
    }
  } else {
    counts.statements++;
    counts.byKind[keyword] = (counts.byKind[keyword] ?? 0) + 1;
    if (counts.byText) {
      const shape = whole.replace(/\s+/g, " ").trim().slice(0, 120);
      counts.byText[shape] = (counts.byText[shape] ?? 0) + 1;
    }
    if (!inTransaction.has(client)) counts.transactions++;
  }
});

const file = process.env.BENCH_STATEMENTS_FILE;
if (file) process.on("SIGUSR2", () => writeFileSync(file, JSON.stringify(counts)));
