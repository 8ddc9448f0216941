import type { Knex } from "knex";

/**
 * Social: follows, likes, share links; when a persona was made public; the hourly message rollup
 * and the trending set that explore, the feed and the marketplace rank by (server/areas/personas/trending.ts);
 * trigram indexes for user search. Every table holding a user's data cascades from users, so the
 * account purge removes it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw("CREATE EXTENSION IF NOT EXISTS pg_trgm");

  await knex.schema.createTable("follows", (table) => {
    table.uuid("id").primary();
    table.uuid("follower_id").notNullable().references("users.id").onDelete("CASCADE");
    table.uuid("following_id").notNullable().references("users.id").onDelete("CASCADE");
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.unique(["follower_id", "following_id"]);
  });
  await knex.raw("ALTER TABLE follows ADD CONSTRAINT follows_not_self CHECK (follower_id <> following_id)");
  // Both lists read most recent first; the counts read the leading column.
  await knex.raw("CREATE INDEX follows_following ON follows (following_id, created_at DESC, id DESC)");
  await knex.raw("CREATE INDEX follows_follower ON follows (follower_id, created_at DESC, id DESC)");

  await knex.schema.createTable("likes", (table) => {
    table.uuid("id").primary();
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.uuid("persona_id").notNullable().references("personas.id").onDelete("CASCADE");
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.unique(["user_id", "persona_id"]);
    table.index(["persona_id"]);
  });
  await knex.raw("CREATE INDEX likes_user ON likes (user_id, created_at DESC, id DESC)");

  await knex.schema.createTable("persona_shares", (table) => {
    table.uuid("id").primary();
    table.text("code").notNullable().unique();
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.uuid("persona_id").notNullable().references("personas.id").onDelete("CASCADE");
    table.text("platform").notNullable();
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("expires_at", { useTz: true });
    table.bigInteger("open_count").notNullable().defaultTo(0);
    table.timestamp("last_opened_at", { useTz: true });
    table.index(["user_id", "persona_id", "platform"]);
    table.index(["persona_id"]);
  });
  await knex.raw("ALTER TABLE persona_shares ADD CONSTRAINT persona_shares_platform CHECK (platform IN ('microblog', 'forum', 'link'))");

  // When the persona last became public: the feed's "new persona" time. Existing public personas
  // were published when they were made, as far as anyone can tell.
  await knex.schema.alterTable("personas", (table) => {
    table.timestamp("published_at", { useTz: true });
  });
  await knex.raw("UPDATE personas SET published_at = created_at WHERE is_public");
  await knex.raw("CREATE INDEX personas_creator_published ON personas (creator_id, published_at DESC, id DESC) WHERE is_public");

  // Messages per persona per hour (hours since the Unix epoch, so no time zone is involved), kept by
  // a statement trigger on messages: trending reads a week of these, never the messages themselves.
  // No foreign key: a message stored while its persona is being deleted must not fail on it; rows
  // of deleted personas age out with the window.
  await knex.schema.createTable("persona_activity_hourly", (table) => {
    table.uuid("persona_id").notNullable();
    table.integer("hour").notNullable();
    table.integer("messages").notNullable();
    table.primary(["persona_id", "hour"]);
    table.index(["hour"]);
  });
  await knex.raw(`
    CREATE FUNCTION persona_activity_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO persona_activity_hourly (persona_id, hour, messages)
      SELECT persona_id, floor(extract(epoch FROM created_at) / 3600)::int, count(*)
        FROM new_messages GROUP BY 1, 2
      ON CONFLICT (persona_id, hour) DO UPDATE SET messages = persona_activity_hourly.messages + excluded.messages;
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE TRIGGER messages_activity_rollup AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_messages FOR EACH STATEMENT EXECUTE FUNCTION persona_activity_rollup()`);
  await knex.raw(`
    INSERT INTO persona_activity_hourly (persona_id, hour, messages)
    SELECT persona_id, floor(extract(epoch FROM created_at) / 3600)::int, count(*) FROM messages GROUP BY 1, 2`);

  // The trending set, refreshed by the persona_trending_refresh task; trending_since survives refreshes.
  await knex.schema.createTable("persona_trending", (table) => {
    table.uuid("persona_id").primary().references("personas.id").onDelete("CASCADE");
    table.integer("score").notNullable();
    table.timestamp("trending_since", { useTz: true }).notNullable();
    table.timestamp("refreshed_at", { useTz: true }).notNullable();
  });

  // User search matches substrings of both names; trigram indexes serve ILIKE '%q%'.
  await knex.raw("CREATE INDEX users_username_trgm ON users USING gin (username gin_trgm_ops)");
  await knex.raw("CREATE INDEX users_display_name_trgm ON users USING gin (display_name gin_trgm_ops)");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("DROP INDEX users_display_name_trgm");
  await knex.raw("DROP INDEX users_username_trgm");
  await knex.schema.dropTable("persona_trending");
  await knex.raw("DROP TRIGGER messages_activity_rollup ON messages");
  await knex.raw("DROP FUNCTION persona_activity_rollup()");
  await knex.schema.dropTable("persona_activity_hourly");
  await knex.raw("DROP INDEX personas_creator_published");
  await knex.schema.alterTable("personas", (table) => table.dropColumn("published_at"));
  for (const name of ["persona_shares", "likes", "follows"]) await knex.schema.dropTable(name);
}
