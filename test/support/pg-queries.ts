import pg from "pg";

/** What `hook` is told of each query: the client (one connection) that sends it, its text and values. */
export type QueryHook = (client: object, text: string, values: readonly unknown[] | undefined) => void;

const hooks = new Set<QueryHook>();
/** Checks that may fail a query instead of sending it (`failQueries`). */
const failures = new Set<(text: string) => { error: Error; afterRunning: boolean } | undefined>();
let installed = false;

/**
 * Calls `hook` with every query any `pg` client of this process sends (knex's, pools',
 * graphile-worker's; on the embedded default too, which is reached through `pg` as well); answers
 * the removal. For tests and benches that count what a request asks of the database: a call is one
 * round trip (`pg` sends each as one exchange).
 */
export function onEveryQuery(hook: QueryHook): () => void {
  install();
  hooks.add(hook);
  return () => void hooks.delete(hook);
}

/**
 * Until the answered stop is called, every query whose text `matches` fails with `error()` as `pg`
 * reports a failure (to its callback, or as a rejected promise) without reaching the database: a
 * database out of reach for those statements, while the rest of the service's queries go on. With
 * `afterRunning`, the query runs (and commits, when it is a statement of its own) and its answer is
 * replaced by the failure: a connection cut after the commit, before the answer came back.
 */
export function failQueries(matches: (text: string) => boolean, error: () => Error, options: { afterRunning?: boolean } = {}): () => void {
  install();
  const check = (text: string) => (matches(text) ? { error: error(), afterRunning: options.afterRunning === true } : undefined);
  failures.add(check);
  return () => void failures.delete(check);
}

function install() {
  if (installed) return;
  installed = true;
  const original = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  pg.Client.prototype.query = function observed(this: object, ...args: unknown[]) {
    if (hooks.size || failures.size) {
      const first = args[0] as string | { text?: string; values?: unknown[] } | undefined;
      const text = typeof first === "string" ? first : (first?.text ?? "");
      const values = typeof first === "string" ? (Array.isArray(args[1]) ? (args[1] as unknown[]) : undefined) : first?.values;
      for (const each of hooks) each(this, text, values);
      for (const check of failures) {
        const failure = check(text);
        if (!failure) continue;
        const at = args.findLastIndex((arg) => typeof arg === "function");
        const callback = at === -1 ? undefined : (args[at] as (error: Error | null, result?: unknown) => void);
        if (failure.afterRunning) {
          if (!callback) return (original.apply(this, args) as Promise<unknown>).then(() => Promise.reject(failure.error));
          return original.apply(this, args.map((arg, i) => (i === at ? () => callback(failure.error) : arg)));
        }
        if (!callback) return Promise.reject(failure.error);
        process.nextTick(() => callback(failure.error));
        return undefined;
      }
    }
    return original.apply(this, args);
  } as typeof pg.Client.prototype.query;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * From now on, the statements whose values name one of `ids` (with `followIds`, also an id such a
 * statement carried before: a reservation's lease, which its end names alone): their texts, spaces
 * folded. Counting by values leaves out what the service runs meanwhile for others (jobs, sweeps).
 * `stop` ends the watch.
 */
export function statementsNaming(ids: readonly string[], options: { followIds?: boolean } = {}): { texts: string[]; stop: () => void } {
  const named = new Set(ids);
  const texts: string[] = [];
  const stop = onEveryQuery((_client, text, values) => {
    if (!values?.some((value) => typeof value === "string" && named.has(value))) return;
    texts.push(text.replace(/\s+/g, " ").trim());
    if (options.followIds) for (const value of values) if (typeof value === "string" && UUID.test(value)) named.add(value);
  });
  return { texts, stop };
}
