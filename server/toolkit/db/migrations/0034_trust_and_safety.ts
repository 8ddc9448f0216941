import type { Knex } from "knex";

/**
 * Trust and safety (issue 41; docs/design/safety.md):
 * - content ratings: `personas.content_rating` (`general` / `mature`), copied onto the persona's
 *   listing, its search row and the listing counters (per category and rating), so that a list
 *   that shows `general` only counts and pages by it;
 * - takedowns: `taken_down_at` on each reportable row (personas, listings, reviews, room messages,
 *   and a profile's `users.profile_taken_down_at`), what every public query reads; the record of
 *   who took it down, why, its appeal and revert is `moderation_actions`;
 * - suspensions: `users.suspended_at` and its reason; a suspended account's public content is
 *   hidden by the same rule as a deleted one's;
 * - the account's opt-in to mature content: `users.show_mature`;
 * - reports (with the snapshot of what was reported), the actions on users' content, and the
 *   operators' audit log.
 * `listed` (migration 0014) keeps its one rule, now one function: the persona public and not taken
 * down, its creator's account neither deleted nor suspended, the listing itself not taken down.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE users
      ADD COLUMN suspended_at timestamptz,
      ADD COLUMN suspension_reason text,
      ADD COLUMN profile_taken_down_at timestamptz,
      ADD COLUMN show_mature boolean NOT NULL DEFAULT false`);
  await knex.raw(`
    ALTER TABLE personas
      ADD COLUMN content_rating text NOT NULL DEFAULT 'general' CONSTRAINT personas_content_rating CHECK (content_rating IN ('general', 'mature')),
      ADD COLUMN taken_down_at timestamptz`);
  await knex.raw("ALTER TABLE ratings ADD COLUMN taken_down_at timestamptz");
  await knex.raw("ALTER TABLE room_messages ADD COLUMN taken_down_at timestamptz");
  await knex.raw(`
    ALTER TABLE marketplace_listings
      ADD COLUMN content_rating text NOT NULL DEFAULT 'general',
      ADD COLUMN taken_down_at timestamptz`);
  await knex.raw("ALTER TABLE marketplace_search ADD COLUMN content_rating text NOT NULL DEFAULT 'general'");

  // The one rule of a listing shown in the marketplace, written once.
  await knex.raw(`
    CREATE FUNCTION marketplace_listed(is_public boolean, persona_taken_down timestamptz, creator_deleted timestamptz, creator_suspended timestamptz, listing_taken_down timestamptz)
    RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT is_public AND persona_taken_down IS NULL AND creator_deleted IS NULL AND creator_suspended IS NULL AND listing_taken_down IS NULL $$`);

  await knex.raw(`
    CREATE OR REPLACE FUNCTION marketplace_listing_fill() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      SELECT p.name, p.description, p.content_rating, marketplace_listed(p.is_public, p.taken_down_at, u.deleted_at, u.suspended_at, NEW.taken_down_at)
        INTO NEW.search_name, NEW.search_description, NEW.content_rating, NEW.listed
        FROM personas p JOIN users u ON u.id = p.creator_id WHERE p.id = NEW.persona_id;
      RETURN NEW;
    END $$`);
  // A listing taken down or restored by an operator leaves or comes back in the statement that does it.
  await knex.raw(`
    CREATE FUNCTION marketplace_listing_taken_down() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      SELECT marketplace_listed(p.is_public, p.taken_down_at, u.deleted_at, u.suspended_at, NEW.taken_down_at) INTO NEW.listed
        FROM personas p JOIN users u ON u.id = p.creator_id WHERE p.id = NEW.persona_id;
      RETURN NEW;
    END $$`);
  await knex.raw(`
    CREATE TRIGGER marketplace_listing_taken_down BEFORE UPDATE OF taken_down_at ON marketplace_listings FOR EACH ROW
    WHEN (OLD.taken_down_at IS DISTINCT FROM NEW.taken_down_at) EXECUTE FUNCTION marketplace_listing_taken_down()`);
  await knex.raw(`
    CREATE OR REPLACE FUNCTION marketplace_persona_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE marketplace_listings l
         SET search_name = NEW.name, search_description = NEW.description, content_rating = NEW.content_rating,
             listed = marketplace_listed(NEW.is_public, NEW.taken_down_at, u.deleted_at, u.suspended_at, l.taken_down_at)
        FROM users u WHERE u.id = NEW.creator_id AND l.persona_id = NEW.id;
      RETURN NULL;
    END $$`);
  await knex.raw("DROP TRIGGER marketplace_persona_changed ON personas");
  await knex.raw(`
    CREATE TRIGGER marketplace_persona_changed AFTER UPDATE OF name, description, is_public, taken_down_at, content_rating ON personas FOR EACH ROW
    WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.description IS DISTINCT FROM NEW.description OR OLD.is_public IS DISTINCT FROM NEW.is_public
          OR OLD.taken_down_at IS DISTINCT FROM NEW.taken_down_at OR OLD.content_rating IS DISTINCT FROM NEW.content_rating)
    EXECUTE FUNCTION marketplace_persona_changed()`);
  await knex.raw(`
    CREATE OR REPLACE FUNCTION marketplace_creator_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE marketplace_listings l SET listed = marketplace_listed(p.is_public, p.taken_down_at, NEW.deleted_at, NEW.suspended_at, l.taken_down_at)
        FROM personas p WHERE p.id = l.persona_id AND l.creator_id = NEW.id;
      RETURN NULL;
    END $$`);
  await knex.raw("DROP TRIGGER marketplace_creator_changed ON users");
  await knex.raw(`
    CREATE TRIGGER marketplace_creator_changed AFTER UPDATE OF deleted_at, suspended_at ON users FOR EACH ROW
    WHEN (OLD.deleted_at IS DISTINCT FROM NEW.deleted_at OR OLD.suspended_at IS DISTINCT FROM NEW.suspended_at) EXECUTE FUNCTION marketplace_creator_changed()`);

  // The search row carries the rating, so that a count with `q` reads it alone.
  await knex.raw(`
    CREATE OR REPLACE FUNCTION marketplace_listing_searched() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO marketplace_search AS s (listing_id, category, listed, content_rating, document)
      VALUES (NEW.id, NEW.category, NEW.listed, NEW.content_rating, marketplace_listing_document(NEW.search_name, NEW.search_description, NEW.tags))
      ON CONFLICT (listing_id) DO UPDATE SET category = excluded.category, listed = excluded.listed, content_rating = excluded.content_rating, document = excluded.document;
      RETURN NULL;
    END $$`);
  await knex.raw("DROP TRIGGER marketplace_listing_searched ON marketplace_listings");
  await knex.raw(`
    CREATE TRIGGER marketplace_listing_searched AFTER INSERT OR UPDATE OF search_name, search_description, tags, listed, category, content_rating
    ON marketplace_listings FOR EACH ROW EXECUTE FUNCTION marketplace_listing_searched()`);

  // Listed listings per category and rating: a list of `general` only reads its counter row.
  await knex.raw("ALTER TABLE marketplace_category_counts ADD COLUMN content_rating text NOT NULL DEFAULT 'general'");
  await knex.raw("ALTER TABLE marketplace_category_counts DROP CONSTRAINT marketplace_category_counts_pkey");
  await knex.raw("ALTER TABLE marketplace_category_counts ADD PRIMARY KEY (category, content_rating)");
  await replaceCounters(knex, "category, content_rating");

  await knex.schema.createTable("reports", (table) => {
    table.uuid("id").primary();
    // Null for a report the moderation provider made (content held for review).
    table.uuid("reporter_id").references("users.id").onDelete("CASCADE");
    table.text("target_type").notNullable();
    table.uuid("target_id").notNullable();
    table.uuid("target_owner_id").references("users.id").onDelete("CASCADE");
    table.text("reason").notNullable();
    table.text("details");
    // What the target showed when it was reported, so that a later edit cannot hide it.
    table.jsonb("snapshot").notNullable();
    table.text("status").notNullable().defaultTo("open");
    table.text("resolution");
    table.text("resolved_by");
    table.timestamp("resolved_at", { useTz: true });
    table.timestamp("created_at", { useTz: true }).notNullable();
  });
  await knex.raw("ALTER TABLE reports ADD CONSTRAINT reports_status CHECK (status IN ('open', 'resolved'))");
  // One open report per reporter and target: a second is 409 until the first is resolved.
  await knex.raw("CREATE UNIQUE INDEX reports_one_open ON reports (reporter_id, target_type, target_id) WHERE status = 'open'");
  await knex.raw("CREATE INDEX reports_reporter ON reports (reporter_id, created_at DESC, id DESC)");
  await knex.raw("CREATE INDEX reports_open ON reports (target_type, target_id) WHERE status = 'open'");
  await knex.raw("CREATE INDEX reports_owner ON reports (target_owner_id)");

  await knex.schema.createTable("moderation_actions", (table) => {
    table.uuid("id").primary();
    // takedown, hold (the moderation provider's), warning, suspension
    table.text("kind").notNullable();
    table.text("target_type").notNullable();
    table.uuid("target_id").notNullable();
    table.uuid("owner_id").notNullable().references("users.id").onDelete("CASCADE");
    table.text("reason").notNullable();
    table.uuid("report_id").references("reports.id").onDelete("SET NULL");
    table.text("created_by").notNullable();
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.text("appeal_message");
    table.timestamp("appealed_at", { useTz: true });
    // upheld (the operator kept it after the appeal) or null
    table.text("appeal_outcome");
    table.timestamp("reverted_at", { useTz: true });
    table.text("reverted_by");
    table.text("revert_reason");
  });
  await knex.raw("CREATE INDEX moderation_actions_owner ON moderation_actions (owner_id, created_at DESC, id DESC)");
  // At most one standing takedown or hold per target.
  await knex.raw("CREATE UNIQUE INDEX moderation_actions_standing ON moderation_actions (target_type, target_id) WHERE reverted_at IS NULL AND kind IN ('takedown', 'hold')");

  await knex.schema.createTable("moderation_audit", (table) => {
    table.uuid("id").primary();
    table.timestamp("at", { useTz: true }).notNullable();
    // The operator (as the CLI names them), `owner` for an appeal, `moderation:<provider>` for a hold.
    table.text("actor").notNullable();
    table.text("action").notNullable();
    table.text("target_type").notNullable();
    table.uuid("target_id");
    // The account the action concerned. No foreign key: the record outlives the account, and the
    // purge clears this and the reason (the safety area's beforePurge), so it keeps no person.
    table.uuid("subject_user_id");
    table.text("reason");
    table.uuid("report_id");
    table.uuid("action_id");
  });
  await knex.raw("CREATE INDEX moderation_audit_at ON moderation_audit (at DESC, id DESC)");
  await knex.raw("CREATE INDEX moderation_audit_subject ON moderation_audit (subject_user_id)");
}

/** The listing counters' statement triggers of migration 0014, grouped by `key`. */
async function replaceCounters(knex: Knex, key: string): Promise<void> {
  const countBy = (rows: string) => `
    INSERT INTO marketplace_category_counts AS c (${key}, listings)
    SELECT ${key}, sum(n) FROM (${rows}) d GROUP BY ${key} HAVING sum(n) <> 0 ORDER BY ${key}
    ON CONFLICT (${key}) DO UPDATE SET listings = c.listings + excluded.listings`;
  const counted = {
    insert: `SELECT ${key}, 1 AS n FROM added WHERE listed`,
    delete: `SELECT ${key}, -1 AS n FROM removed WHERE listed`,
    update: `SELECT ${key}, 1 AS n FROM after_rows WHERE listed UNION ALL SELECT ${key}, -1 FROM before_rows WHERE listed`,
  };
  for (const [event, rows] of Object.entries(counted)) {
    await knex.raw(`
      CREATE OR REPLACE FUNCTION marketplace_listings_counted_${event}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN ${countBy(rows)}; RETURN NULL; END $$`);
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable("moderation_audit");
  await knex.schema.dropTable("moderation_actions");
  await knex.schema.dropTable("reports");

  await knex.raw(`
    DELETE FROM marketplace_category_counts WHERE content_rating <> 'general';
    UPDATE marketplace_category_counts c SET listings = (SELECT count(*) FROM marketplace_listings l WHERE l.listed AND l.category = c.category)`);
  await knex.raw("ALTER TABLE marketplace_category_counts DROP CONSTRAINT marketplace_category_counts_pkey");
  await knex.raw("ALTER TABLE marketplace_category_counts DROP COLUMN content_rating");
  await knex.raw("ALTER TABLE marketplace_category_counts ADD PRIMARY KEY (category)");
  await replaceCounters(knex, "category");

  await knex.raw("DROP TRIGGER marketplace_listing_searched ON marketplace_listings");
  await knex.raw(`
    CREATE OR REPLACE FUNCTION marketplace_listing_searched() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO marketplace_search AS s (listing_id, category, listed, document)
      VALUES (NEW.id, NEW.category, NEW.listed, marketplace_listing_document(NEW.search_name, NEW.search_description, NEW.tags))
      ON CONFLICT (listing_id) DO UPDATE SET category = excluded.category, listed = excluded.listed, document = excluded.document;
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE TRIGGER marketplace_listing_searched AFTER INSERT OR UPDATE OF search_name, search_description, tags, listed, category
    ON marketplace_listings FOR EACH ROW EXECUTE FUNCTION marketplace_listing_searched()`);

  await knex.raw("DROP TRIGGER marketplace_creator_changed ON users");
  await knex.raw(`
    CREATE OR REPLACE FUNCTION marketplace_creator_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE marketplace_listings l SET listed = p.is_public AND NEW.deleted_at IS NULL
        FROM personas p WHERE p.id = l.persona_id AND l.creator_id = NEW.id;
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE TRIGGER marketplace_creator_changed AFTER UPDATE OF deleted_at ON users FOR EACH ROW
    WHEN (OLD.deleted_at IS DISTINCT FROM NEW.deleted_at) EXECUTE FUNCTION marketplace_creator_changed()`);
  await knex.raw("DROP TRIGGER marketplace_persona_changed ON personas");
  await knex.raw(`
    CREATE OR REPLACE FUNCTION marketplace_persona_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE marketplace_listings l SET search_name = NEW.name, search_description = NEW.description, listed = NEW.is_public AND u.deleted_at IS NULL
        FROM users u WHERE u.id = NEW.creator_id AND l.persona_id = NEW.id;
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE TRIGGER marketplace_persona_changed AFTER UPDATE OF name, description, is_public ON personas FOR EACH ROW
    WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.description IS DISTINCT FROM NEW.description OR OLD.is_public IS DISTINCT FROM NEW.is_public)
    EXECUTE FUNCTION marketplace_persona_changed()`);
  await knex.raw("DROP TRIGGER marketplace_listing_taken_down ON marketplace_listings");
  await knex.raw("DROP FUNCTION marketplace_listing_taken_down()");
  await knex.raw(`
    CREATE OR REPLACE FUNCTION marketplace_listing_fill() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      SELECT p.name, p.description, p.is_public AND u.deleted_at IS NULL INTO NEW.search_name, NEW.search_description, NEW.listed
        FROM personas p JOIN users u ON u.id = p.creator_id WHERE p.id = NEW.persona_id;
      RETURN NEW;
    END $$`);
  await knex.raw("DROP FUNCTION marketplace_listed(boolean, timestamptz, timestamptz, timestamptz, timestamptz)");

  await knex.raw("ALTER TABLE marketplace_search DROP COLUMN content_rating");
  await knex.raw("ALTER TABLE marketplace_listings DROP COLUMN content_rating, DROP COLUMN taken_down_at");
  await knex.raw("ALTER TABLE room_messages DROP COLUMN taken_down_at");
  await knex.raw("ALTER TABLE ratings DROP COLUMN taken_down_at");
  await knex.raw("ALTER TABLE personas DROP COLUMN content_rating, DROP COLUMN taken_down_at");
  await knex.raw("ALTER TABLE users DROP COLUMN suspended_at, DROP COLUMN suspension_reason, DROP COLUMN profile_taken_down_at, DROP COLUMN show_mature");
}
