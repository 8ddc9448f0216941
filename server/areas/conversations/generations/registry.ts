import type { Task } from "graphile-worker";
import { v7 as uuidv7 } from "uuid";
import type { components } from "../../../../generated/openapi.d.ts";
import { streamError, type StreamError } from "../../../toolkit/http/error-catalogue.ts";
import type { IdempotentOutcome } from "../../../toolkit/http/idempotency.ts";
import type { Logger } from "../../../toolkit/logger.ts";
import type { Reply, ReplyRecord } from "../../replies/index.ts";
import { LiveLog, type LiveLogDeps, type LiveLogStore } from "../../../toolkit/events/live-log.ts";
import { generationEnded, generationStarted } from "../../../toolkit/metrics/replies.ts";
import { retryWhileUnavailable } from "../../../toolkit/db/retry-unavailable.ts";
import { isUniqueViolation } from "../../../toolkit/db/rows.ts";
import type { Services } from "../../../toolkit/services.ts";
import type { ReplyParts } from "../chat/replying.ts";
import {
  finishGeneration, generationEndPart, generationEventsAfter, generationRowPart, insertEndedGeneration, insertGeneration, insertGenerationEvents, purgeGenerationDeltas, renewGenerationLeases, type GenerationEventRow, type GenerationRow, type GenerationStatus,
} from "./store.ts";
import type { StreamOutcome } from "../chat/stream.ts";

type Done = components["schemas"]["ChatStreamDone"];

/** Deltas are written in batches: one insert at most this often per generation. */
const FLUSH_MS = 50;
/** ...or at once when this many characters are waiting. */
const FLUSH_CHARS = 4_000;
/**
 * How long the deltas of an ended generation stay resumable at least
 * (docs/adr/0128-deltas-of-ended-generations-are-purged-by-a-job-after-an.md).
 */
export const DELTA_RETENTION_MS = 60 * 60 * 1000;
/** The job that drops older deltas, every ten minutes: so they stay at most 70 minutes. */
export const DELTAS_PURGE_TASK = "generation_deltas_purge";
export const generationCrontab = [`*/10 * * * * ${DELTAS_PURGE_TASK}`];

/** Drops the deltas of generations that ended over `DELTA_RETENTION_MS` ago (their ends stay). */
export function deltasPurgeTask(services: Services): Task {
  // A job rather than a statement after every generation: each run looks at every generation
  // that ended before the cut, which a send should not pay for.
  return async () => {
    await services.areas.generations.events.purge(services.now());
  };
}

/** The channels every API process listens on: a batch of events was stored; stop this generation. */
export const EVENTS_CHANNEL = "generation_events";
export const STOP_CHANNEL = "generation_stop";

export const TERMINAL_EVENTS = new Set(["done", "error"]);

/** A generation running in this process: its events so far, for followers on the same process. */
export interface LiveGeneration {
  id: string;
  readonly events: readonly GenerationEventRow[];
  /** Calls `listener` with every later event; returns the unsubscribe. */
  subscribe(listener: (event: GenerationEventRow) => void): () => void;
  stop(): void;
  /** Resolves once the generation has ended and its end is stored. */
  readonly finished: Promise<void>;
}

/** Generation events as the live-event log reads them: the stream is the generation, the cursor its `seq`. */
const generationEventLog: LiveLogStore = {
  after: async (knex, generationId, cursor) =>
    (await generationEventsAfter(knex, generationId, Number(cursor))).map((event) => ({ id: String(event.seq), type: event.event, data: event.data })),
  purge: purgeGenerationDeltas,
};

declare module "../../../toolkit/services.ts" {
  interface AreaRegistries {
    /** This process's generations and the log of their events (issue 21). */
    generations: Generations;
  }
}

/** This process's generations, listening for stops and stored events from the first `ready()` on. */
export class Generations {
  readonly running = new Map<string, LiveGeneration>();
  /** The events of every generation, stored in `generation_events`, announced on `EVENTS_CHANNEL`. */
  readonly events: LiveLog;
  /** Renews the leases of `running` while there are any. */
  renewal: NodeJS.Timeout | undefined;
  readonly #deps: LiveLogDeps;
  #ready: Promise<void> | undefined;

  constructor(deps: LiveLogDeps) {
    this.#deps = deps;
    this.events = new LiveLog(deps, { channel: EVENTS_CHANNEL, store: generationEventLog, retentionMs: DELTA_RETENTION_MS, describe: "generation events" });
  }

  ready(): Promise<void> {
    const { notifications } = this.#deps.db;
    this.#ready ??= Promise.all([notifications.listen(STOP_CHANNEL, (id) => this.running.get(id)?.stop()), this.events.ready()])
      .then(() => {})
      // Not fatal: without notifications, followers still poll and stops still reach this process's own generations.
      .catch((error: unknown) => this.#deps.log.error({ err: error }, "could not listen for generation events"));
    return this.#ready;
  }
}

/** Waits for the generations this process runs to end (shutdown: their replies get stored). */
export async function settleGenerations(services: Services): Promise<void> {
  await Promise.all([...services.areas.generations.running.values()].map((generation) => generation.finished));
}

interface GenerationStart {
  reply: Reply;
  conversationId: string;
  userId: string;
  /** Aborts the reply's model call and keeps what it produced (the engine's `stop`). */
  stop: AbortController;
  key: IdempotentOutcome<StreamOutcome> | undefined;
  log: Logger;
  /** Runs once the reply is over and its messages stored, before its end is (a tree reply's lease). */
  onEnd?: () => Promise<void>;
  /**
   * The reply's statement parts (chat/replying.ts), when the caller lets the generation ride on its
   * messages' statements: the row goes with the user message, the last events and the end with the
   * reply (issue 37). Only without an Idempotency-Key (whose record needs the row before the
   * stream) and without `onEnd` (which must run before the end is stored).
   */
  parts?: ReplyParts;
}

/** A generation's end, as stored and as sent. */
interface GenerationEnd {
  end: Pick<GenerationRow, "status" | "user_message_id" | "reply_message_id" | "error">;
  last: GenerationEventRow;
  outcome: StreamOutcome;
}

/** The end of a generation whose reply `reply` (answering `inputId`) was stored; `seq` is the `done` event's. */
function doneEnd(id: string, reply: ReplyRecord, inputId: string, seq: number): GenerationEnd {
  const { usage, citations, stopped } = reply;
  const tokens = { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens };
  const status: GenerationStatus = stopped ? "stopped" : "done";
  return {
    end: { status, user_message_id: inputId, reply_message_id: reply.id, error: null },
    last: { seq, event: "done", data: { message_id: reply.id, citations, usage: tokens, ...(stopped ? { stopped: true as const } : {}) } satisfies Done },
    outcome: { outcome: "done", user_message_id: inputId, assistant_message_id: reply.id, usage: tokens, generation_id: id },
  };
}

/**
 * Runs a streamed reply detached from any HTTP request: its events are numbered, kept in memory for
 * followers on this process, stored in batches for followers anywhere, and its end is recorded
 * whoever listens. The first event, `start`, names the generation.
 */
export async function startGeneration(services: Services, start: GenerationStart): Promise<LiveGeneration> {
  const registry = services.areas.generations;
  await registry.ready();
  const { knex } = services.db;
  const id = uuidv7();
  const row: GenerationRow = {
    id, conversation_id: start.conversationId, user_id: start.userId, status: "running",
    user_message_id: null, reply_message_id: null, error: null, started_at: services.now(), finished_at: null,
  };
  const log = start.log.child({ generationId: id });
  const events: GenerationEventRow[] = [];
  const listeners = new Set<(event: GenerationEventRow) => void>();
  const riding = start.parts && !start.key && !start.onEnd ? start.parts : undefined;
  const created = riding ? rowWithInput(services, riding, row) : rowOnItsOwn(insertGeneration(knex, row, services.config.generationLeaseMs));
  // Recorded before anything is streamed, so that a retry with the key while this runs follows it
  // instead of starting another; and only once the row exists, or a retry on another process could
  // find the key naming a generation it cannot read yet (a 404).
  const recording = start.key
    ? created.stored.then(() => start.key!.record({ outcome: "running", generation_id: id })).catch((error: unknown) => log.error({ err: error }, "could not record a running stream"))
    : undefined;
  const batches = registry.events.appender<GenerationEventRow>(id, {
    write: (batch, announcement) => insertGenerationEvents(knex, id, batch, [announcement]),
    flushMs: FLUSH_MS,
    flushWeight: FLUSH_CHARS,
    log,
    after: created.stored.catch((error: unknown) => log.error({ err: error }, "could not store a generation")),
  });
  /**
   * `start` names the generation: a client that hears it may read, resume or stop it on any
   * process, so when the row rides on the user message's statement, `start` (and the deltas behind
   * it) wait for that statement, which is sent as the model is asked. A reply that fails before
   * storing its user message starts at once (its row is inserted with its end).
   */
  let starting: Promise<void> | undefined;
  const announceStart = () =>
    (starting ??= (async () => {
      if (riding && created.taken()) await created.stored.catch(() => undefined);
      queue(emit("start", { generation_id: id }), 0);
    })());
  // The end rides on the reply's statement: the remaining deltas, the `done` and the state, announced when it commits.
  let rodeWithReply: { rest: GenerationEventRow[]; committed: boolean } | undefined;
  if (riding) {
    riding.reply = async (reply, inputId) => {
      // Before the `done`'s number is taken: `start` is the first event.
      await announceStart();
      const rest = await batches.take();
      const ridden = { rest, committed: false };
      rodeWithReply = ridden;
      const { end, last } = doneEnd(id, reply, inputId, events.length + 1);
      const announcement = registry.events.announcement(id);
      return {
        ...generationEndPart({ id, ...end, finished_at: services.now() }, [...rest, last]),
        ...(announcement.selects ? { selects: announcement.selects } : {}),
        afterCommit: async () => {
          ridden.committed = true;
          await announcement.afterCommit?.();
        },
      };
    };
  }

  const emit = (event: string, data: unknown): GenerationEventRow => {
    const stored = { seq: events.length + 1, event, data };
    events.push(stored);
    for (const listener of listeners) listener(stored);
    return stored;
  };
  const queue = (event: GenerationEventRow, chars: number) => batches.queue(event, chars);

  let ending: Promise<void> | undefined;
  const ended = () => (ending ??= (start.onEnd?.() ?? Promise.resolve()).catch((error: unknown) => log.error({ err: error }, "could not end a generation")));

  const run = async () => {
    // With an Idempotency-Key, the client hears of the generation only once a retry would find it.
    await recording;
    if (!riding) await announceStart();
    let end: Pick<GenerationRow, "status" | "user_message_id" | "reply_message_id" | "error"> = {
      status: "failed", user_message_id: null, reply_message_id: null, error: { code: "internal_error", message: "The reply ended unexpectedly" } satisfies StreamError,
    };
    let last: GenerationEventRow | undefined;
    let outcome: StreamOutcome | undefined;
    try {
      for await (const event of start.reply) {
        await announceStart();
        if (event.type === "delta") {
          queue(emit("delta", { content: event.content }), event.content.length);
        } else if (event.type === "done") {
          ({ end, last, outcome } = doneEnd(id, event.reply, event.input.id, events.length + 1));
        } else if (event.type === "error") {
          // Tool calls never reach a conversation's reply: only the OpenAI-compatible door offers tools.
          const failure = streamError(event.error);
          end = { status: "failed", user_message_id: event.inputId, reply_message_id: null, error: failure };
          last = { seq: events.length + 1, event: "error", data: failure };
          outcome = { outcome: "failed", user_message_id: event.inputId, generation_id: id };
        }
      }
    } catch (error) {
      log.error({ err: error }, "generation failed");
    }
    await announceStart();
    last ??= { seq: events.length + 1, event: "error", data: end.error };
    generationEnded(id, end.status);
    // The caller's hold ends before the end is stored (its messages are): a client that hears the end
    // may start the next reply at once, and until the row says so the generation still counts as
    // running wherever that is checked.
    await ended();
    if (!rodeWithReply?.committed) {
      // The remaining deltas (those a failed reply statement took back too) and the end in one
      // statement, after the batches before them.
      const rest = [...(rodeWithReply?.rest ?? []), ...(await batches.take())];
      const finished = { id, ...end, finished_at: services.now() };
      // A row never stored (the reply failed before its user message, or that statement failed) is
      // stored with its end: a client that heard `start` can always read how the generation ended.
      const rowStored = await created.settled();
      const finish = () => finishGeneration(knex, finished, [...rest, last!], [registry.events.announcement(id)]);
      // A statement that failed as its connection was cut may have committed all the same (its
      // answer lost on the way): the row is there, and the end goes onto it.
      const store = rowStored
        ? finish
        : () => insertEndedGeneration(knex, { ...row, ...finished }, [...rest, last!], [registry.events.announcement(id)]).catch((error: unknown) => {
            if (isUniqueViolation(error, "generations_pkey")) return finish();
            throw error;
          });
      try {
        // No request waits on this write, so nobody could retry it: it waits out a failover itself,
        // within the lease (after which another process may record the generation lost).
        await retryWhileUnavailable(store, {
          forMs: services.config.generationLeaseMs,
          signal: services.stopping,
          onRetry: (error) => log.warn({ err: error }, "the database is unreachable; storing the end of a generation again"),
        });
      } catch (error) {
        log.error({ err: error }, "could not store the end of a generation");
      }
    }
    await recording;
    if (outcome) await start.key?.record(outcome).catch((error: unknown) => log.error({ err: error }, "could not record a finished stream"));
    // Only after the end is stored: a follower that sees it gone from memory reads the end from the table.
    emit(last.event, last.data);
  };

  const live: LiveGeneration = {
    id,
    events,
    subscribe(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    stop: () => start.stop.abort(),
    finished: Promise.resolve(),
  };
  registry.running.set(id, live);
  generationStarted(id);
  keepLeases(services, registry);
  (live as { finished: Promise<void> }).finished = run().finally(async () => {
    await ended();
    registry.running.delete(id);
    keepLeases(services, registry);
  });
  return live;
}

/** How a generation's row gets stored: `stored` settles with its statement; `settled` says whether it was stored. */
interface GenerationRowWrite {
  stored: Promise<void>;
  /** Whether the row went with a statement (which settles `stored`). */
  taken: () => boolean;
  /** Once `stored` has settled (or when the row never went with any statement): whether the row is stored. */
  settled: () => Promise<boolean>;
}

/** The row inserted on its own, before the reply starts. */
function rowOnItsOwn(stored: Promise<void>): GenerationRowWrite {
  stored.catch(() => undefined);
  return { stored, taken: () => true, settled: () => stored.then(() => true, () => false) };
}

/**
 * The generation's row, riding on the statement that stores the reply's user message: `stored`
 * settles with that statement. When no user message was stored (the reply failed before),
 * `settled` claims the row for the end's statement and answers false.
 */
function rowWithInput(services: Services, parts: ReplyParts, row: GenerationRow): GenerationRowWrite {
  let settle!: { resolve: () => void; reject: (error: unknown) => void };
  const stored = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
  stored.catch(() => undefined);
  let ridden = false;
  parts.input = () => {
    if (ridden) return undefined;
    ridden = true;
    return { ...generationRowPart(row, services.config.generationLeaseMs), afterCommit: () => settle.resolve(), onFailure: (error) => settle.reject(error) };
  };
  return {
    stored,
    taken: () => ridden,
    settled: async () => {
      if (!ridden) {
        ridden = true;
        settle.reject(new Error("The generation's row is stored with its end"));
      }
      return stored.then(() => true, () => false);
    },
  };
}

/**
 * While this process runs generations, renews their leases every quarter of the lease in one
 * statement, so another process can tell a dead generator (lease run out) from a slow one.
 */
function keepLeases(services: Services, registry: Generations): void {
  if (registry.running.size === 0) {
    clearInterval(registry.renewal);
    registry.renewal = undefined;
    return;
  }
  const leaseMs = services.config.generationLeaseMs;
  registry.renewal ??= setInterval(() => {
    renewGenerationLeases(services.db.knex, [...registry.running.keys()], leaseMs)
      .catch((error: unknown) => services.log.warn({ err: error }, "could not renew generation leases"));
  }, leaseMs / 4).unref();
}
