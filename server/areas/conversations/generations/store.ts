import type { Knex } from "knex";
import { jsonRows } from "../../../toolkit/db/rows.ts";
import { runCarrying, type StatementPart } from "../../../toolkit/db/statement-parts.ts";
import type { StreamError } from "../../../toolkit/http/error-catalogue.ts";

export type GenerationStatus = "running" | "done" | "stopped" | "failed";

export interface GenerationRow {
  id: string;
  conversation_id: string;
  user_id: string;
  status: GenerationStatus;
  user_message_id: string | null;
  reply_message_id: string | null;
  error: StreamError | null;
  started_at: Date;
  finished_at: Date | null;
}

/** One event of a generation as stored for resumes; `seq` is the SSE id. */
export interface GenerationEventRow {
  seq: number;
  event: string;
  data: unknown;
}

const COLUMNS = ["id", "conversation_id", "user_id", "status", "user_message_id", "reply_message_id", "error", "started_at", "finished_at"] as const;

export async function insertGeneration(knex: Knex, row: GenerationRow, leaseMs: number): Promise<void> {
  await knex("generations").insert({ ...row, error: row.error === null ? null : JSON.stringify(row.error), lease_until: leaseEnd(knex, leaseMs) });
}

/** The same insert as part of another statement (a streamed reply's user message carries it). */
export function generationRowPart(row: GenerationRow, leaseMs: number): StatementPart {
  const values = COLUMNS.map((column) => (column === "error" ? (row.error === null ? null : JSON.stringify(row.error)) : row[column]));
  return {
    ctes: [{
      sql: `generation_row AS (INSERT INTO generations (${COLUMNS.join(", ")}, lease_until) VALUES (${COLUMNS.map(() => "?").join(", ")}, now() + make_interval(secs => ?)))`,
      bindings: [...values, leaseMs / 1000],
    }],
  };
}

const leaseEnd = (knex: Knex, leaseMs: number) => knex.raw("now() + make_interval(secs => ?)", [leaseMs / 1000]);

/** Renews the leases of the generations this process runs (one statement for all of them). */
export async function renewGenerationLeases(knex: Knex, ids: readonly string[], leaseMs: number): Promise<void> {
  if (ids.length === 0) return;
  await knex("generations").whereIn("id", ids).andWhere({ status: "running" }).update({ lease_until: leaseEnd(knex, leaseMs) });
}

/**
 * Records a running generation whose lease ran out as failed, with an `error` event after its last
 * stored one and after `afterSeq` (a follower may have seen events of the dead process that it never
 * stored), in one statement; true when this call recorded it (a live or ended one is untouched).
 */
export async function failLostGeneration(knex: Knex, id: string, error: StreamError, afterSeq = 0): Promise<boolean> {
  const result = await knex.raw(
    `with lost as (
       update generations set status = 'failed', error = ?::jsonb, finished_at = now()
        where id = ? and status = 'running' and lease_until < now()
       returning id
     ), ended as (
       insert into generation_events (generation_id, seq, event, data)
       select lost.id, greatest(coalesce((select max(seq) from generation_events where generation_id = lost.id), 0), ?::int) + 1, 'error', ?::jsonb from lost
       returning generation_id
     )
     select count(*)::int as n from ended`,
    [JSON.stringify(error), id, afterSeq, JSON.stringify(error)],
  );
  return Number((result.rows as { n: number }[])[0]?.n ?? 0) > 0;
}

/** Whether a generation of the conversation is running on a live process (its lease held). */
export async function hasRunningGeneration(knex: Knex, conversationId: string): Promise<boolean> {
  const row = await knex("generations")
    .select("id")
    .where({ conversation_id: conversationId, status: "running" })
    .andWhere((q) => q.whereNull("lease_until").orWhere("lease_until", ">", knex.fn.now()))
    .first();
  return row !== undefined;
}

/** The user's generation of that conversation; undefined for anyone else's or an unknown one. */
export async function findUserGeneration(knex: Knex, userId: string, conversationId: string, id: string): Promise<GenerationRow | undefined> {
  return knex("generations").select([...COLUMNS]).where({ id, conversation_id: conversationId, user_id: userId }).first();
}

export async function findGeneration(knex: Knex, id: string): Promise<GenerationRow | undefined> {
  return knex("generations").select([...COLUMNS]).where({ id }).first();
}

/** Stores a batch of a generation's events, with `parts` (its announcement) in the same statement. */
export async function insertGenerationEvents(knex: Knex, generationId: string, events: readonly GenerationEventRow[], parts: readonly StatementPart[] = []): Promise<void> {
  if (events.length === 0) return;
  const rows = eventRows(generationId, events);
  await runCarrying(knex, parts, (carried) => ({
    sql: `WITH ${carried.ctes}batch AS (INSERT INTO generation_events (${rows.columns}) ${rows.select}) SELECT 1${carried.selects}`,
    bindings: [...carried.cteBindings, ...rows.bindings, ...carried.selectBindings],
  }));
}

/** `generation_events` rows of a generation's events, as an insert's columns, values and bindings. */
function eventRows(generationId: string, events: readonly GenerationEventRow[]) {
  return jsonRows("generation_events", EVENT_COLUMNS, events.map((e) => ({ generation_id: generationId, seq: e.seq, event: e.event, data: e.data })));
}

const EVENT_COLUMNS = ["generation_id", "seq", "event", "data"] as const;

/** The stored events after `afterSeq`, in order. */
export async function generationEventsAfter(knex: Knex, generationId: string, afterSeq: number): Promise<GenerationEventRow[]> {
  return knex("generation_events").select("seq", "event", "data").where({ generation_id: generationId }).andWhere("seq", ">", afterSeq).orderBy("seq");
}

/** The stored `done` or `error` of a generation, if it has ended. */
export async function endEvent(knex: Knex, generationId: string): Promise<GenerationEventRow | undefined> {
  return knex("generation_events").select("seq", "event", "data").where({ generation_id: generationId }).whereIn("event", ["done", "error"]).first();
}

/**
 * Records the end: the last events (the remaining deltas and the `done` or `error`) and the final
 * state, in one statement, so a resume that sees the state also finds the events; `parts` (its
 * announcement) ride along.
 */
export async function finishGeneration(
  knex: Knex,
  end: Pick<GenerationRow, "id" | "status" | "user_message_id" | "reply_message_id" | "error"> & { finished_at: Date },
  events: readonly GenerationEventRow[],
  parts: readonly StatementPart[] = [],
): Promise<void> {
  // The end's own CTEs are the statement's last: the comma after them goes.
  await runCarrying(knex, [generationEndPart(end, events), ...parts], (carried) => ({
    sql: `WITH ${carried.ctes.replace(/,\n$/, "")} SELECT 1${carried.selects}`,
    bindings: [...carried.cteBindings, ...carried.selectBindings],
  }));
}

/**
 * A generation whose row was never stored, stored with its end: the row in its final state and its
 * last events in one statement (the events' foreign key is checked at the statement's end).
 */
export async function insertEndedGeneration(knex: Knex, row: GenerationRow, events: readonly GenerationEventRow[], parts: readonly StatementPart[] = []): Promise<void> {
  const rows = eventRows(row.id, events);
  await runCarrying(knex, [generationRowPart(row, 0), ...parts], (carried) => ({
    sql: `WITH ${carried.ctes}generation_events_end AS (INSERT INTO generation_events (${rows.columns}) ${rows.select}) SELECT 1${carried.selects}`,
    bindings: [...carried.cteBindings, ...rows.bindings, ...carried.selectBindings],
  }));
}

/**
 * The end as part of another statement (a streamed reply's own carries it, so the reply, its
 * generation's last events and its state commit together).
 */
export function generationEndPart(
  end: Pick<GenerationRow, "id" | "status" | "user_message_id" | "reply_message_id" | "error"> & { finished_at: Date },
  events: readonly GenerationEventRow[],
): StatementPart {
  // Raw, not knex's builder: it compiled these two CTEs in a few tenths of a millisecond, every send.
  const rows = eventRows(end.id, events);
  return {
    ctes: [
      // Present with no events too: one text, whatever the events (rows.ts jsonRows).
      { sql: `generation_events_end AS (INSERT INTO generation_events (${rows.columns}) ${rows.select})`, bindings: rows.bindings },
      {
        sql: "generation_state AS (UPDATE generations SET status = ?, user_message_id = ?, reply_message_id = ?, error = ?, finished_at = ? WHERE id = ?)",
        bindings: [end.status, end.user_message_id, end.reply_message_id, end.error === null ? null : JSON.stringify(end.error), end.finished_at, end.id],
      },
    ],
  };
}

/**
 * Drops the deltas of generations that ended before `before`; their `done` or `error` stays, so a
 * late resume still learns how the generation ended (the reply itself is a stored message).
 */
export async function purgeGenerationDeltas(knex: Knex, before: Date): Promise<number> {
  return knex("generation_events")
    .whereIn("generation_id", knex("generations").select("id").where("finished_at", "<", before))
    .whereNotIn("event", ["done", "error"])
    .delete();
}
