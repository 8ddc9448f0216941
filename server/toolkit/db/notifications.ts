import { EventEmitter } from "node:events";
import type { Knex } from "knex";
import pg from "pg";
import type { Logger } from "../logger.ts";
import type { StatementPart } from "./statement-parts.ts";

export type NotificationHandler = (payload: string) => void;

/**
 * Cross-process signals over the database: PostgreSQL `LISTEN/NOTIFY` on a real server, an
 * in-process bus on the embedded default (one API process owns its data dir; PGlite's socket
 * multiplexer does not forward asynchronous notifications). A notification is a hint carrying a
 * small payload (an id): receivers read the truth from the tables, so a missed one costs latency,
 * never data. `onReconnect` tells subscribers when notifications may have been missed.
 */
export interface Notifications {
  /** Calls `handler` with every payload sent on `channel`, from any process; resolves once listening. */
  listen(channel: string, handler: NotificationHandler): Promise<() => Promise<void>>;
  /**
   * Sends `payload` on `channel`. Given a transaction, it is delivered when (and only if) the
   * transaction commits, as PostgreSQL does.
   */
  notify(channel: string, payload: string, trx?: Knex | Knex.Transaction): Promise<void>;
  /**
   * The same notification as part of another statement (statement-parts.ts): delivered when that
   * statement commits, without a round trip of its own on PostgreSQL.
   */
  inStatement(channel: string, payload: string): StatementPart;
  /** Called after the listening connection was lost and re-established (catch up from the tables). */
  onReconnect(handler: () => void): () => void;
  close(): Promise<void>;
}

// PostgreSQL channel names are identifiers; ours are fixed strings of the code, checked anyway.
const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;
const RECONNECT_MS = [100, 250, 500, 1_000, 2_000, 5_000];

function checkChannel(channel: string): void {
  if (!CHANNEL.test(channel)) throw new Error(`Invalid notification channel "${channel}"`);
}

/** An in-process bus with the same delivery rule: after the transaction commits. */
export function localNotifications(): Notifications {
  const bus = new EventEmitter();
  bus.setMaxListeners(0);
  return {
    async listen(channel, handler) {
      checkChannel(channel);
      bus.on(channel, handler);
      return async () => void bus.off(channel, handler);
    },
    async notify(channel, payload, trx) {
      checkChannel(channel);
      const emit = () => setImmediate(() => bus.emit(channel, payload));
      if (trx && "executionPromise" in trx) trx.executionPromise.then(emit, () => {});
      else emit();
    },
    inStatement(channel, payload) {
      checkChannel(channel);
      return { afterCommit: () => void setImmediate(() => bus.emit(channel, payload)) };
    },
    onReconnect: () => () => {},
    async close() {
      bus.removeAllListeners();
    },
  };
}

/**
 * One dedicated connection per process LISTENs on every channel any subscriber asked for, opened on
 * the first `listen`; it reconnects with backoff and listens again, then calls the reconnect hooks.
 * `url` is a direct connection (DATABASE_LISTEN_URL): a pooler in transaction mode would hand the
 * LISTEN's server connection to other clients. Notifications are sent through `knex` (any pooler).
 */
export function postgresNotifications(url: string, knex: Knex, log: Logger): Notifications {
  const handlers = new Map<string, Set<NotificationHandler>>();
  const reconnectHooks = new Set<() => void>();
  let client: pg.Client | undefined;
  let connecting: Promise<pg.Client> | undefined;
  let closed = false;
  let attempt = 0;

  const dispatch = (message: pg.Notification) => {
    for (const handler of handlers.get(message.channel) ?? []) {
      try {
        handler(message.payload ?? "");
      } catch (error) {
        log.error({ err: error, channel: message.channel }, "notification handler failed");
      }
    }
  };

  const connect = (): Promise<pg.Client> => {
    connecting ??= (async () => {
      const next = new pg.Client({ connectionString: url });
      next.on("notification", dispatch);
      next.on("error", (error) => {
        log.warn({ err: error }, "notification connection failed; reconnecting");
        lost(next);
      });
      next.on("end", () => lost(next));
      try {
        await next.connect();
        for (const channel of handlers.keys()) await next.query(`LISTEN ${channel}`);
      } catch (error) {
        // Not kept (a LISTEN refused by a standby that a failover's proxy still routes to): closed,
        // or every retry would leave a connection open.
        next.removeAllListeners("notification");
        void next.end().catch(() => {});
        throw error;
      }
      client = next;
      attempt = 0;
      return next;
    })().finally(() => {
      connecting = undefined;
    });
    return connecting;
  };

  const lost = (which: pg.Client) => {
    if (client !== which || closed) return;
    client = undefined;
    which.removeAllListeners("notification");
    void which.end().catch(() => {});
    const retry = () => {
      if (closed || handlers.size === 0) return;
      connect().then(
        () => {
          for (const hook of reconnectHooks) hook();
        },
        (error: unknown) => {
          log.warn({ err: error }, "notification connection could not be re-established");
          setTimeout(retry, RECONNECT_MS[Math.min(attempt++, RECONNECT_MS.length - 1)]).unref();
        },
      );
    };
    setTimeout(retry, RECONNECT_MS[0]).unref();
  };

  return {
    async listen(channel, handler) {
      checkChannel(channel);
      let set = handlers.get(channel);
      if (!set) {
        set = new Set();
        handlers.set(channel, set);
        // LISTEN is idempotent: a connection made just now may already listen on it.
        const listening = client ?? (await connect());
        await listening.query(`LISTEN ${channel}`);
      }
      set.add(handler);
      return async () => {
        set.delete(handler);
        if (set.size > 0 || handlers.get(channel) !== set) return;
        handlers.delete(channel);
        await client?.query(`UNLISTEN ${channel}`).catch(() => {});
      };
    },
    async notify(channel, payload, trx) {
      checkChannel(channel);
      await (trx ?? knex).raw("select pg_notify(?, ?)", [channel, payload]);
    },
    inStatement(channel, payload) {
      checkChannel(channel);
      return { selects: [{ sql: "pg_notify(?, ?)", bindings: [channel, payload] }] };
    },
    onReconnect(hook) {
      reconnectHooks.add(hook);
      return () => void reconnectHooks.delete(hook);
    },
    async close() {
      closed = true;
      handlers.clear();
      const current = client ?? (await connecting?.catch(() => undefined));
      client = undefined;
      await current?.end().catch(() => {});
    },
  };
}
