import type { Knex } from "knex";

/**
 * Issue 34, item 10: links to this service's image files were stored absolute, with the host and port
 * of the day they were made; a database restored onto another port, or a service that moved, kept
 * pointing at the old address. They are stored as paths now (`/v1/images/files/<name>.png`) and made
 * absolute when read (server/toolkit/links.ts). This rewrites the links stored before: every image's
 * own link, and the avatars of personas that name a file this service stores (a generated image or a
 * card's avatar). An avatar on another server whose path merely looks like ours is left as it is,
 * since its name is not one of ours. Users' avatars are links their owners give (HTTPS, never made
 * by the service) and stay as given.
 */
// No question mark in the SQL: knex.raw reads it as a binding.
const FILE = String.raw`[0-9a-f]{32}\.png`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`UPDATE images SET url = '/v1/images/files/' || file_name WHERE url <> '/v1/images/files/' || file_name`);
  await knex.raw(
    `UPDATE personas SET avatar_url = '/v1/images/files/' || substring(avatar_url FROM '(${FILE})$')
      WHERE avatar_url ~ '^https{0,1}://[^#]*/v1/images/files/${FILE}$'
        AND substring(avatar_url FROM '(${FILE})$') IN (SELECT file_name FROM images UNION SELECT file_name FROM card_avatars)`,
  );
}

/** The paths stay paths: the address they were made at is not known any more. */
export async function down(): Promise<void> {}
