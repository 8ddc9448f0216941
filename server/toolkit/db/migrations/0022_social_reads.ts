import type { Knex } from "knex";

/**
 * Social reads at issue 15's sizes (bench:social): indexes that let the feed, the user search's
 * follower counts and the feed's like counts run as index-only scans instead of visiting a heap
 * row per follow, like or followed creator, and check liveness against the deleted accounts only.
 */
export async function up(knex: Knex): Promise<void> {
  // Counts of live follows and likes are checked against the few deleted accounts (server/areas/social/store.ts).
  await knex.raw("CREATE INDEX users_deleted ON users (id) WHERE deleted_at IS NOT NULL");
  // Counting a user's followers / a persona's likes needs the other side of each row.
  await knex.raw("CREATE INDEX follows_following_follower ON follows (following_id, follower_id)");
  await knex.raw("CREATE INDEX likes_persona_user ON likes (persona_id, user_id)");
  await knex.raw("DROP INDEX likes_persona_id_index");
  // The feed reads every public persona of each followed creator with its feed time.
  await knex.raw("CREATE INDEX personas_creator_public ON personas (creator_id) INCLUDE (id, published_at, created_at) WHERE is_public");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("DROP INDEX personas_creator_public");
  await knex.raw("CREATE INDEX likes_persona_id_index ON likes (persona_id)");
  await knex.raw("DROP INDEX likes_persona_user");
  await knex.raw("DROP INDEX follows_following_follower");
  await knex.raw("DROP INDEX users_deleted");
}
