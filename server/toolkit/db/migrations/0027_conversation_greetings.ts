import type { Knex } from "knex";

/**
 * Issue 34: a new conversation starts with the persona's greeting stored as its first message, and
 * a character card's alternate greetings beside it as its alternatives. Greetings sit at depth 0
 * (the messages of the exchange start at 1), so that the active path's length at its leaf is still
 * the exchanged messages (`message_count`), which greetings are not. No column changes.
 *
 * The statement triggers on `messages` that keep the activity rollups (hourly, for trending:
 * migration 0007; daily, for studio analytics and the marketplace: migration 0014) count exchanged
 * messages only: they skip greetings, on insert and on delete alike, so that opening a
 * conversation (with up to 100 alternate greetings) moves no statistic. Their bodies are those of
 * 0007 and 0014 with the filter; `down` puts back the unfiltered ones.
 */

// Days and hours since the Unix epoch of a timestamp, as the rollups store them.
const DAY = "floor(extract(epoch FROM created_at) / 86400)::int";
const HOUR = "floor(extract(epoch FROM created_at) / 3600)::int";

/** The three rollup functions, reading only the transition-table rows that `where` keeps. */
function rollupFunctions(where: string): string[] {
  const added = `(SELECT * FROM new_messages ${where}) new_messages`;
  const removed = `(SELECT * FROM old_messages ${where}) old_messages`;
  return [
    `CREATE OR REPLACE FUNCTION persona_activity_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO persona_activity_hourly (persona_id, hour, messages)
      SELECT persona_id, ${HOUR}, count(*)
        FROM ${added} GROUP BY 1, 2
      ON CONFLICT (persona_id, hour) DO UPDATE SET messages = persona_activity_hourly.messages + excluded.messages;
      RETURN NULL;
    END $$`,
    `CREATE OR REPLACE FUNCTION persona_daily_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE p uuid[]; u uuid[]; d int[]; n int[];
    BEGIN
      WITH g AS (
        SELECT persona_id, ${DAY} AS day, user_id, count(*)::int AS messages, (count(*) FILTER (WHERE role = 'user'))::int AS sent
          FROM ${added} GROUP BY 1, 2, 3),
      saved AS (
        INSERT INTO persona_daily_users AS s (persona_id, day, user_id, messages, sent)
        SELECT * FROM g ORDER BY 1, 2, 3
        ON CONFLICT (persona_id, day, user_id) DO UPDATE SET messages = s.messages + excluded.messages, sent = s.sent + excluded.sent
        RETURNING s.persona_id, s.day, s.user_id, s.sent)
      SELECT array_agg(saved.persona_id), array_agg(saved.user_id), array_agg(saved.day), array_agg(1) INTO p, u, d, n
        FROM saved JOIN g ON g.persona_id = saved.persona_id AND g.day = saved.day AND g.user_id = saved.user_id
       WHERE g.sent > 0 AND saved.sent = g.sent;
      IF p IS NOT NULL THEN PERFORM persona_senders_shift(p, u, d, n); END IF;
      INSERT INTO persona_daily_messages (persona_id, day, messages)
      SELECT persona_id, ${DAY}, count(*) FROM ${added} GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT (persona_id, day) DO UPDATE SET messages = persona_daily_messages.messages + excluded.messages;
      RETURN NULL;
    END $$`,
    `CREATE OR REPLACE FUNCTION persona_daily_forget() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE p uuid[]; u uuid[]; d int[]; n int[];
    BEGIN
      WITH g AS (
        SELECT persona_id, ${DAY} AS day, user_id, count(*)::int AS messages, (count(*) FILTER (WHERE role = 'user'))::int AS sent
          FROM ${removed} GROUP BY 1, 2, 3),
      saved AS (
        UPDATE persona_daily_users s SET messages = s.messages - g.messages, sent = s.sent - g.sent
          FROM g WHERE s.persona_id = g.persona_id AND s.day = g.day AND s.user_id = g.user_id
        RETURNING s.persona_id, s.day, s.user_id, s.sent, g.sent AS removed)
      SELECT array_agg(persona_id), array_agg(user_id), array_agg(day), array_agg(-1) INTO p, u, d, n
        FROM saved WHERE sent <= 0 AND removed > 0;
      IF p IS NOT NULL THEN PERFORM persona_senders_shift(p, u, d, n); END IF;
      DELETE FROM persona_daily_users s USING (SELECT DISTINCT persona_id, ${DAY} AS day, user_id FROM ${removed}) g
       WHERE s.persona_id = g.persona_id AND s.day = g.day AND s.user_id = g.user_id AND s.messages <= 0;
      UPDATE persona_daily_messages s SET messages = s.messages - g.messages
        FROM (SELECT persona_id, ${DAY} AS day, count(*) AS messages FROM ${removed} GROUP BY 1, 2) g
       WHERE s.persona_id = g.persona_id AND s.day = g.day;
      DELETE FROM persona_daily_messages s USING (SELECT DISTINCT persona_id, ${DAY} AS day FROM ${removed}) g
       WHERE s.persona_id = g.persona_id AND s.day = g.day AND s.messages <= 0;
      RETURN NULL;
    END $$`,
  ];
}

export async function up(knex: Knex): Promise<void> {
  for (const sql of rollupFunctions("WHERE depth > 0")) await knex.raw(sql);
}

export async function down(knex: Knex): Promise<void> {
  for (const sql of rollupFunctions("")) await knex.raw(sql);
}
