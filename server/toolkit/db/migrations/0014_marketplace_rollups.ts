import type { Knex } from "knex";

/**
 * Rollups that studio analytics, the trending sorts and marketplace search read instead of the
 * messages and the joins behind them (issue 14; bench/README.md#marketplace, docs/design/marketplace.md):
 * - `persona_daily_users` becomes exact: rebuilt from the messages and, from now on, also moved by
 *   deletions (a deleted conversation or a purged account leaves the counts);
 * - `persona_daily_messages`: messages per persona and UTC day;
 * - `persona_daily_senders`: per persona, UTC day and gap, how many users sent a message that day
 *   whose previous sending day with the persona was `gap` days earlier (90 = 90 or more, or never).
 *   Distinct users of a period, the first half's senders and the retained ones are sums over it;
 * - `persona_trending_scores`: every persona's trending score as of the last refresh, and
 *   `marketplace_trending`, the same score per listing with the listing's sort keys, so that the
 *   trending sorts are an index scan;
 * - the listing keeps copies of what it is searched by (its persona's name and description) and
 *   whether it is listed at all, kept by triggers on personas and users; `marketplace_search` holds
 *   its tsvector (with tags) under a GIN index; `marketplace_category_counts` counts the listed
 *   ones per category.
 * All but the trending scores (the trending task's) is kept by triggers in the writing statement:
 * exact at commit, with no job to lag behind or to reconcile deletions.
 */

// Days since the Unix epoch of a timestamp, as every daily rollup stores it.
const DAY = "floor(extract(epoch FROM created_at) / 86400)::int";

/**
 * Computes the three daily rollups from the stored messages, replacing what they held. The
 * migration runs it before the triggers exist; elsewhere persona_daily_users must be empty or its
 * delete trigger disabled (bench/marketplace.ts runs it after a bulk load with the rollup
 * triggers off, when the table is empty).
 */
export async function rebuildDailyRollups(knex: Knex): Promise<void> {
  for (const table of ["persona_daily_senders", "persona_daily_messages", "persona_daily_users"]) await knex.raw(`DELETE FROM ${table}`);
  // Conversations' greetings (depth 0, migration 0027) are not counted, as the triggers of 0027 do
  // not count them; when this migration first runs, the column is not there yet (nor any greeting).
  const exchanged = (await knex.schema.hasColumn("messages", "depth")) ? "WHERE m.depth > 0" : "";
  await knex.raw(`
    INSERT INTO persona_daily_users (persona_id, day, user_id, messages, sent)
    SELECT m.persona_id, floor(extract(epoch FROM m.created_at) / 86400)::int, m.user_id, count(*), count(*) FILTER (WHERE m.role = 'user')
      FROM messages m JOIN users u ON u.id = m.user_id JOIN personas p ON p.id = m.persona_id ${exchanged} GROUP BY 1, 2, 3`);
  await knex.raw(`
    INSERT INTO persona_daily_messages (persona_id, day, messages)
    SELECT persona_id, day, sum(messages) FROM persona_daily_users GROUP BY 1, 2`);
  await knex.raw(`
    INSERT INTO persona_daily_senders (persona_id, day, gap, users)
    SELECT persona_id, day, gap, count(*) FROM (
      SELECT persona_id, day, coalesce(least(day - lag(day) OVER (PARTITION BY persona_id, user_id ORDER BY day), 90), 90) AS gap
        FROM persona_daily_users WHERE sent > 0) s
    GROUP BY 1, 2, 3`);
}

export async function up(knex: Knex): Promise<void> {
  // One user's days with one persona, read whenever a sending day appears or goes.
  await knex.raw("CREATE INDEX persona_daily_users_pair ON persona_daily_users (user_id, persona_id, day)");
  await knex.raw("DROP INDEX persona_daily_users_user_id_index");
  await knex.schema.createTable("persona_daily_messages", (table) => {
    table.uuid("persona_id").notNullable().references("personas.id").onDelete("CASCADE");
    table.integer("day").notNullable();
    table.integer("messages").notNullable();
    table.primary(["persona_id", "day"]);
  });
  await knex.schema.createTable("persona_daily_senders", (table) => {
    table.uuid("persona_id").notNullable().references("personas.id").onDelete("CASCADE");
    table.integer("day").notNullable();
    table.smallint("gap").notNullable();
    table.integer("users").notNullable();
    table.primary(["persona_id", "day", "gap"]);
  });
  // Rebuilt from the messages, persona_daily_users included: until now deletions were not subtracted.
  await rebuildDailyRollups(knex);

  // Sending days that appeared (+1) or went (-1), per persona and user: the senders rollup moves
  // by the difference between the gaps of the user's days before and after. Only days within 90
  // of a change can change gap (gaps are capped at 90), so only those are read. A lock per persona
  // and user serialises two transactions changing the same user's days, so neither computes from
  // a set of days the other is changing; the locks are 256 hash buckets, so that a statement
  // touching thousands of users (a bulk import, a purge) never fills the lock table. Rows of a
  // persona being deleted are skipped: its rollups go by cascade.
  await knex.raw(`
    CREATE FUNCTION persona_senders_shift(p_personas uuid[], p_users uuid[], p_days int[], p_deltas int[]) RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      d_personas uuid[];
      d_days int[];
      d_gaps smallint[];
      d_users int[];
    BEGIN
      PERFORM pg_advisory_xact_lock(14, k)
         FROM (SELECT DISTINCT hashtext(c.p::text || c.u::text) & 255 AS k FROM unnest(p_personas, p_users) AS c(p, u)
                WHERE EXISTS (SELECT 1 FROM personas x WHERE x.id = c.p) ORDER BY 1) locks;
      WITH ch AS (
        SELECT c.* FROM unnest(p_personas, p_users, p_days, p_deltas) AS c(persona_id, user_id, day, delta)
         WHERE EXISTS (SELECT 1 FROM personas x WHERE x.id = c.persona_id)),
      pairs AS (SELECT persona_id, user_id, min(day) - 90 AS lo, max(day) + 90 AS hi FROM ch GROUP BY 1, 2),
      -- Each day of the window once: sending now, and whether it was before this statement's change.
      -- Grouped rather than joined, so that no plan can pair every change with every day.
      days AS (
        SELECT persona_id, user_id, day, bool_or(sending) AS sending_after, sum(delta) AS delta FROM (
          SELECT d.persona_id, d.user_id, d.day, true AS sending, 0 AS delta FROM persona_daily_users d
            JOIN pairs p ON p.user_id = d.user_id AND p.persona_id = d.persona_id AND d.day BETWEEN p.lo AND p.hi
           WHERE d.sent > 0
          UNION ALL
          SELECT persona_id, user_id, day, false, delta FROM ch) u
        GROUP BY 1, 2, 3),
      gaps AS (
        SELECT persona_id, day, coalesce(least(day - lag(day) OVER w, 90), 90) AS gap, 1 AS n
          FROM days WHERE sending_after WINDOW w AS (PARTITION BY persona_id, user_id ORDER BY day)
        UNION ALL
        SELECT persona_id, day, coalesce(least(day - lag(day) OVER w, 90), 90), -1
          FROM days WHERE (sending_after AND delta <= 0) OR delta < 0 WINDOW w AS (PARTITION BY persona_id, user_id ORDER BY day)),
      delta AS (SELECT persona_id, day, gap::smallint AS gap, sum(n)::int AS n FROM gaps GROUP BY 1, 2, 3 HAVING sum(n) <> 0)
      SELECT array_agg(persona_id ORDER BY persona_id, day, gap), array_agg(day ORDER BY persona_id, day, gap),
             array_agg(gap ORDER BY persona_id, day, gap), array_agg(n ORDER BY persona_id, day, gap)
        INTO d_personas, d_days, d_gaps, d_users FROM delta;
      IF d_personas IS NULL THEN RETURN; END IF;
      INSERT INTO persona_daily_senders AS s (persona_id, day, gap, users)
      SELECT * FROM unnest(d_personas, d_days, d_gaps, d_users)
      ON CONFLICT (persona_id, day, gap) DO UPDATE SET users = s.users + excluded.users;
      DELETE FROM persona_daily_senders s USING unnest(d_personas, d_days, d_gaps) AS c(persona_id, day, gap)
       WHERE s.persona_id = c.persona_id AND s.day = c.day AND s.gap = c.gap AND s.users <= 0;
    END $$`);
  // Custom plans of the statement above cost more to make than to run (~3x per call, measured);
  // the statement is written so that a generic plan cannot go quadratic on a bulk change.
  await knex.raw("ALTER FUNCTION persona_senders_shift(uuid[], uuid[], int[], int[]) SET plan_cache_mode = force_generic_plan");
  // New messages: the hourly trending rollup (migration 0007) is untouched; the daily ones move
  // here. The days a user starts sending on (the upsert's new `sent` equals what this statement
  // added) move the senders, in this one call: a trigger per event on persona_daily_users would see
  // an upsert's inserts and updates in two calls, each taking the other's changes for the past.
  await knex.raw(`
    CREATE OR REPLACE FUNCTION persona_daily_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE p uuid[]; u uuid[]; d int[]; n int[];
    BEGIN
      WITH g AS (
        SELECT persona_id, ${DAY} AS day, user_id, count(*)::int AS messages, (count(*) FILTER (WHERE role = 'user'))::int AS sent
          FROM new_messages GROUP BY 1, 2, 3),
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
      SELECT persona_id, ${DAY}, count(*) FROM new_messages GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT (persona_id, day) DO UPDATE SET messages = persona_daily_messages.messages + excluded.messages;
      RETURN NULL;
    END $$`);
  // Deleted messages (a conversation, a persona, a purged account) leave the daily rollups, and the
  // days a user stops sending on leave the senders; rows of a persona being deleted are gone
  // already or going, so nothing is inserted here. A row left with no message holds no sender.
  await knex.raw(`
    CREATE FUNCTION persona_daily_forget() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE p uuid[]; u uuid[]; d int[]; n int[];
    BEGIN
      WITH g AS (
        SELECT persona_id, ${DAY} AS day, user_id, count(*)::int AS messages, (count(*) FILTER (WHERE role = 'user'))::int AS sent
          FROM old_messages GROUP BY 1, 2, 3),
      saved AS (
        UPDATE persona_daily_users s SET messages = s.messages - g.messages, sent = s.sent - g.sent
          FROM g WHERE s.persona_id = g.persona_id AND s.day = g.day AND s.user_id = g.user_id
        RETURNING s.persona_id, s.day, s.user_id, s.sent, g.sent AS removed)
      SELECT array_agg(persona_id), array_agg(user_id), array_agg(day), array_agg(-1) INTO p, u, d, n
        FROM saved WHERE sent <= 0 AND removed > 0;
      IF p IS NOT NULL THEN PERFORM persona_senders_shift(p, u, d, n); END IF;
      DELETE FROM persona_daily_users s USING (SELECT DISTINCT persona_id, ${DAY} AS day, user_id FROM old_messages) g
       WHERE s.persona_id = g.persona_id AND s.day = g.day AND s.user_id = g.user_id AND s.messages <= 0;
      UPDATE persona_daily_messages s SET messages = s.messages - g.messages
        FROM (SELECT persona_id, ${DAY} AS day, count(*) AS messages FROM old_messages GROUP BY 1, 2) g
       WHERE s.persona_id = g.persona_id AND s.day = g.day;
      DELETE FROM persona_daily_messages s USING (SELECT DISTINCT persona_id, ${DAY} AS day FROM old_messages) g
       WHERE s.persona_id = g.persona_id AND s.day = g.day AND s.messages <= 0;
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE TRIGGER messages_daily_forget AFTER DELETE ON messages
    REFERENCING OLD TABLE AS old_messages FOR EACH STATEMENT EXECUTE FUNCTION persona_daily_forget()`);
  // Rows the purge's cascade deletes (a user's, with their messages possibly still there) leave the senders too.
  await knex.raw(`
    CREATE FUNCTION persona_senders_removed() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE p uuid[]; u uuid[]; d int[]; n int[];
    BEGIN
      SELECT array_agg(persona_id), array_agg(user_id), array_agg(day), array_agg(-1) INTO p, u, d, n FROM removed WHERE sent > 0;
      IF p IS NOT NULL THEN PERFORM persona_senders_shift(p, u, d, n); END IF;
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE TRIGGER persona_daily_users_removed AFTER DELETE ON persona_daily_users
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION persona_senders_removed()`);

  // Trending scores of every persona with messages in the window, written by the refresh task
  // (server/areas/personas/trending.ts); explore ranks by them instead of summing the hourly rollup.
  await knex.schema.createTable("persona_trending_scores", (table) => {
    table.uuid("persona_id").primary().references("personas.id").onDelete("CASCADE");
    table.integer("score").notNullable();
  });
  await knex.raw(`
    INSERT INTO persona_trending_scores (persona_id, score)
    SELECT a.persona_id, sum(a.messages) FROM persona_activity_hourly a JOIN personas p ON p.id = a.persona_id
     WHERE a.hour >= floor(extract(epoch FROM now() - interval '7 days') / 3600)::int
     GROUP BY a.persona_id HAVING sum(a.messages) > 0`);

  // What a listing is searched, shown and filtered by, copied from its persona and creator so that
  // a listing query reads one table; `listed`: the persona is public and the creator's account live.
  await knex.raw(`
    ALTER TABLE marketplace_listings
      ADD COLUMN search_name text NOT NULL DEFAULT '',
      ADD COLUMN search_description text NOT NULL DEFAULT '',
      ADD COLUMN listed boolean NOT NULL DEFAULT false`);
  await knex.raw(`
    UPDATE marketplace_listings l SET search_name = p.name, search_description = p.description, listed = p.is_public AND u.deleted_at IS NULL
      FROM personas p JOIN users u ON u.id = p.creator_id WHERE p.id = l.persona_id`);
  // What `q` matches, in a narrow table of its own: counting a common word's matches visits every
  // heap page that holds one, and the listing's row is wide and rewritten by every rating and use
  // (measured at full size: 4,341 pages and 30-46 ms for 25,000 matches on the listing, 1,841 pages
  // here). A trigger on the listing keeps it; `listed` and `category` are there for the count.
  await knex.raw(`
    CREATE FUNCTION marketplace_listing_document(name text, description text, tags text[]) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT to_tsvector('english'::regconfig, name || ' ' || description || ' ' || array_to_string(tags, ' ')) $$`);
  await knex.schema.createTable("marketplace_search", (table) => {
    table.uuid("listing_id").primary().references("marketplace_listings.id").onDelete("CASCADE");
    table.text("category").notNullable();
    table.boolean("listed").notNullable();
    table.specificType("document", "tsvector").notNullable();
  });
  await knex.raw(`
    INSERT INTO marketplace_search (listing_id, category, listed, document)
    SELECT id, category, listed, marketplace_listing_document(search_name, search_description, tags) FROM marketplace_listings`);
  await knex.raw("CREATE INDEX marketplace_search_document ON marketplace_search USING gin (document) WHERE listed");
  await knex.raw(`
    CREATE FUNCTION marketplace_listing_searched() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO marketplace_search AS s (listing_id, category, listed, document)
      VALUES (NEW.id, NEW.category, NEW.listed, marketplace_listing_document(NEW.search_name, NEW.search_description, NEW.tags))
      ON CONFLICT (listing_id) DO UPDATE SET category = excluded.category, listed = excluded.listed, document = excluded.document;
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE TRIGGER marketplace_listing_searched AFTER INSERT OR UPDATE OF search_name, search_description, tags, listed, category
    ON marketplace_listings FOR EACH ROW EXECUTE FUNCTION marketplace_listing_searched()`);
  await knex.raw("DROP INDEX marketplace_listings_category");
  await knex.raw("CREATE INDEX marketplace_listings_category ON marketplace_listings (category, published_at DESC, id DESC) WHERE listed");

  // Listed listings per category, so that a list's `total` without `q` and the categories' counts
  // read at most ten rows. Statement triggers move them in the statement that lists, unlists,
  // moves or deletes listings (cascades included), under the counter rows' locks, taken in
  // category order so that two statements moving several categories cannot deadlock: exact under
  // concurrency. An update that changes neither `listed` nor `category` (ratings, uses) finds no
  // difference and writes nothing.
  await knex.schema.createTable("marketplace_category_counts", (table) => {
    table.text("category").primary();
    table.integer("listings").notNullable();
  });
  await knex.raw(`
    INSERT INTO marketplace_category_counts (category, listings)
    SELECT category, count(*) FILTER (WHERE listed) FROM marketplace_listings GROUP BY category`);
  const countBy = (rows: string) => `
    INSERT INTO marketplace_category_counts AS c (category, listings)
    SELECT category, sum(n) FROM (${rows}) d GROUP BY category HAVING sum(n) <> 0 ORDER BY category
    ON CONFLICT (category) DO UPDATE SET listings = c.listings + excluded.listings`;
  const counter = async (event: "insert" | "update" | "delete", referencing: string, rows: string) => {
    await knex.raw(`
      CREATE FUNCTION marketplace_listings_counted_${event}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN ${countBy(rows)}; RETURN NULL; END $$`);
    await knex.raw(`
      CREATE TRIGGER marketplace_listings_counted_${event} AFTER ${event.toUpperCase()} ON marketplace_listings
      REFERENCING ${referencing} FOR EACH STATEMENT EXECUTE FUNCTION marketplace_listings_counted_${event}()`);
  };
  await counter("insert", "NEW TABLE AS added", "SELECT category, 1 AS n FROM added WHERE listed");
  await counter("delete", "OLD TABLE AS removed", "SELECT category, -1 AS n FROM removed WHERE listed");
  await counter(
    "update",
    "OLD TABLE AS before_rows NEW TABLE AS after_rows",
    "SELECT category, 1 AS n FROM after_rows WHERE listed UNION ALL SELECT category, -1 FROM before_rows WHERE listed",
  );

  // The trending score per listing with the listing's order keys, narrow so that refreshing scores
  // touches no wide row and no full-text index; the trending sort reads its index.
  await knex.schema.createTable("marketplace_trending", (table) => {
    table.uuid("listing_id").primary().references("marketplace_listings.id").onDelete("CASCADE");
    table.integer("score").notNullable();
    table.timestamp("published_at", { useTz: true }).notNullable();
  });
  await knex.raw("CREATE INDEX marketplace_trending_order ON marketplace_trending (score DESC, published_at DESC, listing_id DESC)");
  await knex.raw(`
    INSERT INTO marketplace_trending (listing_id, score, published_at)
    SELECT l.id, coalesce(s.score, 0), l.published_at FROM marketplace_listings l LEFT JOIN persona_trending_scores s ON s.persona_id = l.persona_id`);

  // A new listing takes its copies from its persona and creator; its trending row follows.
  await knex.raw(`
    CREATE FUNCTION marketplace_listing_fill() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      SELECT p.name, p.description, p.is_public AND u.deleted_at IS NULL INTO NEW.search_name, NEW.search_description, NEW.listed
        FROM personas p JOIN users u ON u.id = p.creator_id WHERE p.id = NEW.persona_id;
      RETURN NEW;
    END $$`);
  await knex.raw("CREATE TRIGGER marketplace_listing_fill BEFORE INSERT ON marketplace_listings FOR EACH ROW EXECUTE FUNCTION marketplace_listing_fill()");
  await knex.raw(`
    CREATE FUNCTION marketplace_listing_ranked() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO marketplace_trending (listing_id, score, published_at)
      SELECT n.id, coalesce(s.score, 0), n.published_at FROM new_listings n LEFT JOIN persona_trending_scores s ON s.persona_id = n.persona_id
      ON CONFLICT (listing_id) DO NOTHING;
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE TRIGGER marketplace_listing_ranked AFTER INSERT ON marketplace_listings
    REFERENCING NEW TABLE AS new_listings FOR EACH STATEMENT EXECUTE FUNCTION marketplace_listing_ranked()`);

  // A persona renamed, redescribed, made public or private: its listing follows in the same statement.
  await knex.raw(`
    CREATE FUNCTION marketplace_persona_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE marketplace_listings l SET search_name = NEW.name, search_description = NEW.description, listed = NEW.is_public AND u.deleted_at IS NULL
        FROM users u WHERE u.id = NEW.creator_id AND l.persona_id = NEW.id;
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE TRIGGER marketplace_persona_changed AFTER UPDATE OF name, description, is_public ON personas FOR EACH ROW
    WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.description IS DISTINCT FROM NEW.description OR OLD.is_public IS DISTINCT FROM NEW.is_public)
    EXECUTE FUNCTION marketplace_persona_changed()`);
  // An account deleted (or its deletion undone): its listings leave (or come back) at once.
  await knex.raw(`
    CREATE FUNCTION marketplace_creator_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE marketplace_listings l SET listed = p.is_public AND NEW.deleted_at IS NULL
        FROM personas p WHERE p.id = l.persona_id AND l.creator_id = NEW.id;
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE TRIGGER marketplace_creator_changed AFTER UPDATE OF deleted_at ON users FOR EACH ROW
    WHEN (OLD.deleted_at IS DISTINCT FROM NEW.deleted_at) EXECUTE FUNCTION marketplace_creator_changed()`);

  // Refreshed scores reach the listings' trending rows; a persona that left the scores is back to 0.
  await knex.raw(`
    CREATE FUNCTION marketplace_scores_saved() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE marketplace_trending t SET score = n.score
        FROM saved_scores n JOIN marketplace_listings l ON l.persona_id = n.persona_id
       WHERE t.listing_id = l.id AND t.score <> n.score;
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE FUNCTION marketplace_scores_dropped() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE marketplace_trending t SET score = 0
        FROM dropped_scores o JOIN marketplace_listings l ON l.persona_id = o.persona_id
       WHERE t.listing_id = l.id AND t.score <> 0;
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE TRIGGER persona_trending_scores_inserted AFTER INSERT ON persona_trending_scores
    REFERENCING NEW TABLE AS saved_scores FOR EACH STATEMENT EXECUTE FUNCTION marketplace_scores_saved()`);
  await knex.raw(`
    CREATE TRIGGER persona_trending_scores_updated AFTER UPDATE ON persona_trending_scores
    REFERENCING NEW TABLE AS saved_scores FOR EACH STATEMENT EXECUTE FUNCTION marketplace_scores_saved()`);
  await knex.raw(`
    CREATE TRIGGER persona_trending_scores_deleted AFTER DELETE ON persona_trending_scores
    REFERENCING OLD TABLE AS dropped_scores FOR EACH STATEMENT EXECUTE FUNCTION marketplace_scores_dropped()`);
}

export async function down(knex: Knex): Promise<void> {
  for (const trigger of ["persona_trending_scores_inserted", "persona_trending_scores_updated", "persona_trending_scores_deleted"]) {
    await knex.raw(`DROP TRIGGER ${trigger} ON persona_trending_scores`);
  }
  await knex.raw("DROP TRIGGER marketplace_creator_changed ON users");
  await knex.raw("DROP TRIGGER marketplace_persona_changed ON personas");
  for (const event of ["insert", "delete", "update"]) {
    await knex.raw(`DROP TRIGGER marketplace_listings_counted_${event} ON marketplace_listings`);
    await knex.raw(`DROP FUNCTION marketplace_listings_counted_${event}()`);
  }
  await knex.schema.dropTable("marketplace_category_counts");
  await knex.raw("DROP TRIGGER marketplace_listing_ranked ON marketplace_listings");
  await knex.raw("DROP TRIGGER marketplace_listing_fill ON marketplace_listings");
  for (const fn of ["marketplace_scores_dropped", "marketplace_scores_saved", "marketplace_creator_changed", "marketplace_persona_changed", "marketplace_listing_ranked", "marketplace_listing_fill"]) {
    await knex.raw(`DROP FUNCTION ${fn}()`);
  }
  await knex.schema.dropTable("marketplace_trending");
  await knex.raw("DROP INDEX marketplace_listings_category");
  await knex.raw("CREATE INDEX marketplace_listings_category ON marketplace_listings (category, published_at DESC, id DESC)");
  await knex.raw("DROP TRIGGER marketplace_listing_searched ON marketplace_listings");
  await knex.raw("DROP FUNCTION marketplace_listing_searched()");
  await knex.schema.dropTable("marketplace_search");
  await knex.raw("DROP FUNCTION marketplace_listing_document(text, text, text[])");
  await knex.raw("ALTER TABLE marketplace_listings DROP COLUMN search_name, DROP COLUMN search_description, DROP COLUMN listed");
  await knex.schema.dropTable("persona_trending_scores");

  await knex.raw("DROP TRIGGER persona_daily_users_removed ON persona_daily_users");
  await knex.raw("DROP FUNCTION persona_senders_removed()");
  await knex.raw("DROP FUNCTION persona_senders_shift(uuid[], uuid[], int[], int[])");
  await knex.raw("DROP TRIGGER messages_daily_forget ON messages");
  await knex.raw("DROP FUNCTION persona_daily_forget()");
  // The insert-only rollup of migration 0011.
  await knex.raw(`
    CREATE OR REPLACE FUNCTION persona_daily_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO persona_daily_users (persona_id, day, user_id, messages, sent)
      SELECT persona_id, ${DAY}, user_id, count(*), count(*) FILTER (WHERE role = 'user')
        FROM new_messages GROUP BY 1, 2, 3
      ON CONFLICT (persona_id, day, user_id) DO UPDATE SET
        messages = persona_daily_users.messages + excluded.messages, sent = persona_daily_users.sent + excluded.sent;
      RETURN NULL;
    END $$`);
  await knex.schema.dropTable("persona_daily_senders");
  await knex.schema.dropTable("persona_daily_messages");
  await knex.raw("CREATE INDEX persona_daily_users_user_id_index ON persona_daily_users (user_id)");
  await knex.raw("DROP INDEX persona_daily_users_pair");
}
