import type { Knex } from "knex";

/**
 * Creator studio and marketplace: numbered instruction versions of every persona, marketplace
 * listings and their ratings, A/B variants and the conversations assigned to them. Every table cascades from personas or users, so deleting a persona
 * removes its listing and the account purge removes the rest.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("instruction_versions", (table) => {
    table.uuid("id").primary();
    table.uuid("persona_id").notNullable().references("personas.id").onDelete("CASCADE");
    table.integer("version").notNullable();
    table.text("status").notNullable();
    table.text("instructions").notNullable();
    table.text("changelog").notNullable().defaultTo("");
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("activated_at", { useTz: true });
    table.timestamp("deactivated_at", { useTz: true });
    // The backstop of gap-free numbering: a create that raced past the persona lock fails rather than duplicates.
    table.unique(["persona_id", "version"]);
  });
  await knex.raw("ALTER TABLE instruction_versions ADD CONSTRAINT instruction_versions_status CHECK (status IN ('draft', 'active', 'inactive'))");
  // At most one active version per persona, whatever the application does.
  await knex.raw("CREATE UNIQUE INDEX instruction_versions_one_active ON instruction_versions (persona_id) WHERE status = 'active'");
  // Every existing persona gets its current instructions as version 1, active since it was last changed.
  await knex.raw(`
    INSERT INTO instruction_versions (id, persona_id, version, status, instructions, changelog, created_at, activated_at)
    SELECT gen_random_uuid(), id, 1, 'active', instructions, '', updated_at, updated_at FROM personas`);

  await knex.schema.createTable("marketplace_listings", (table) => {
    table.uuid("id").primary();
    table.uuid("persona_id").notNullable().unique().references("personas.id").onDelete("CASCADE");
    table.uuid("creator_id").notNullable().references("users.id").onDelete("CASCADE");
    table.text("category").notNullable();
    table.specificType("tags", "text[]").notNullable().defaultTo("{}");
    table.text("pricing").notNullable();
    // Counters kept by the statements that change ratings and copies, under the listing's row lock.
    table.integer("use_count").notNullable().defaultTo(0);
    table.integer("review_count").notNullable().defaultTo(0);
    table.integer("rating_sum").notNullable().defaultTo(0);
    for (const value of [1, 2, 3, 4, 5]) table.integer(`rating_${value}`).notNullable().defaultTo(0);
    table.text("featured_reason");
    table.timestamp("featured_at", { useTz: true });
    table.timestamp("published_at", { useTz: true }).notNullable();
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("updated_at", { useTz: true }).notNullable();
    table.index(["creator_id"]);
  });
  await knex.raw("CREATE INDEX marketplace_listings_recent ON marketplace_listings (published_at DESC, id DESC)");
  await knex.raw("CREATE INDEX marketplace_listings_popular ON marketplace_listings (use_count DESC, published_at DESC, id DESC)");
  await knex.raw("CREATE INDEX marketplace_listings_category ON marketplace_listings (category, published_at DESC, id DESC)");

  await knex.schema.createTable("ratings", (table) => {
    table.uuid("id").primary();
    table.uuid("listing_id").notNullable().references("marketplace_listings.id").onDelete("CASCADE");
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.smallint("rating").notNullable();
    table.text("review");
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("updated_at", { useTz: true }).notNullable();
    table.unique(["listing_id", "user_id"]);
    table.index(["user_id"]);
  });
  await knex.raw("ALTER TABLE ratings ADD CONSTRAINT ratings_range CHECK (rating BETWEEN 1 AND 5)");
  await knex.raw("CREATE INDEX ratings_listing_recent ON ratings (listing_id, created_at DESC, id DESC)");
  // The account purge removes ratings by cascade, past the application: the listing's counters
  // forget them in the same statement. (Ratings written through the API move the counters themselves.)
  await knex.raw(`
    CREATE FUNCTION ratings_forget() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE marketplace_listings SET
        review_count = review_count - 1,
        rating_sum = rating_sum - OLD.rating,
        rating_1 = rating_1 - (OLD.rating = 1)::int,
        rating_2 = rating_2 - (OLD.rating = 2)::int,
        rating_3 = rating_3 - (OLD.rating = 3)::int,
        rating_4 = rating_4 - (OLD.rating = 4)::int,
        rating_5 = rating_5 - (OLD.rating = 5)::int
      WHERE id = OLD.listing_id;
      RETURN NULL;
    END $$`);
  await knex.raw("CREATE TRIGGER ratings_forget AFTER DELETE ON ratings FOR EACH ROW EXECUTE FUNCTION ratings_forget()");

  // A/B variants; shares are exact decimals, so that the sum rule never trips on rounding.
  await knex.schema.createTable("persona_variants", (table) => {
    table.uuid("id").primary();
    table.uuid("persona_id").notNullable().references("personas.id").onDelete("CASCADE");
    table.text("name").notNullable();
    table.text("instructions").notNullable();
    table.specificType("traffic_percentage", "numeric").notNullable();
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("updated_at", { useTz: true });
    table.index(["persona_id", "created_at"]);
  });
  await knex.raw("ALTER TABLE persona_variants ADD CONSTRAINT persona_variants_traffic CHECK (traffic_percentage BETWEEN 0 AND 100)");

  // The variant each conversation was assigned when it started, for its whole life; a conversation
  // without a row gets the persona's active instructions.
  await knex.schema.createTable("variant_assignments", (table) => {
    table.uuid("conversation_id").primary().references("conversations.id").onDelete("CASCADE");
    table.uuid("variant_id").notNullable().references("persona_variants.id").onDelete("CASCADE");
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.index(["variant_id"]);
  });

  // Studio analytics read a per-day rollup, never the messages: per persona, UTC day (days since
  // the Unix epoch) and user, the messages stored and how many of them the user sent. Kept by a
  // statement trigger on messages, as the hourly trending rollup is (migration 0007).
  await knex.schema.createTable("persona_daily_users", (table) => {
    table.uuid("persona_id").notNullable().references("personas.id").onDelete("CASCADE");
    table.integer("day").notNullable();
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.integer("messages").notNullable();
    table.integer("sent").notNullable();
    table.primary(["persona_id", "day", "user_id"]);
    table.index(["user_id"]);
  });
  await knex.raw(`
    CREATE FUNCTION persona_daily_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO persona_daily_users (persona_id, day, user_id, messages, sent)
      SELECT persona_id, floor(extract(epoch FROM created_at) / 86400)::int, user_id, count(*), count(*) FILTER (WHERE role = 'user')
        FROM new_messages GROUP BY 1, 2, 3
      ON CONFLICT (persona_id, day, user_id) DO UPDATE SET
        messages = persona_daily_users.messages + excluded.messages, sent = persona_daily_users.sent + excluded.sent;
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE TRIGGER messages_daily_rollup AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_messages FOR EACH STATEMENT EXECUTE FUNCTION persona_daily_rollup()`);
  await knex.raw(`
    INSERT INTO persona_daily_users (persona_id, day, user_id, messages, sent)
    SELECT m.persona_id, floor(extract(epoch FROM m.created_at) / 86400)::int, m.user_id, count(*), count(*) FILTER (WHERE m.role = 'user')
      FROM messages m JOIN users u ON u.id = m.user_id JOIN personas p ON p.id = m.persona_id GROUP BY 1, 2, 3`);

  // Where a copy made with `use` came from; the listing may go, the copy stays.
  await knex.schema.alterTable("personas", (table) => {
    table.uuid("source_listing_id").references("marketplace_listings.id").onDelete("SET NULL");
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable("personas", (table) => table.dropColumn("source_listing_id"));
  await knex.raw("DROP TRIGGER messages_daily_rollup ON messages");
  await knex.raw("DROP FUNCTION persona_daily_rollup()");
  await knex.schema.dropTable("persona_daily_users");
  await knex.raw("DROP TRIGGER ratings_forget ON ratings");
  await knex.raw("DROP FUNCTION ratings_forget()");
  for (const name of ["variant_assignments", "persona_variants", "ratings", "marketplace_listings", "instruction_versions"]) await knex.schema.dropTable(name);
}
