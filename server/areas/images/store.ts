import type { Knex } from "knex";

export interface ImageRow {
  id: string;
  user_id: string;
  persona_id: string | null;
  file_name: string;
  url: string;
  width: number;
  height: number;
  style: string;
  aspect_ratio: string;
  prompt: string;
  provider: string;
  created_at: Date;
}

export async function insertImage(knex: Knex, row: ImageRow): Promise<ImageRow> {
  const [inserted] = await knex("images").insert(row).returning("*");
  return inserted as ImageRow;
}

export async function deleteImageRow(knex: Knex, id: string): Promise<void> {
  await knex("images").where({ id }).delete();
}

/** File names of the images of these accounts (those the purge is about to remove). */
export async function fileNamesOfUsers(knex: Knex, userIds: readonly string[]): Promise<string[]> {
  if (userIds.length === 0) return [];
  const rows = await knex("images").whereIn("user_id", userIds).select<{ file_name: string }[]>("file_name");
  return rows.map((row) => row.file_name);
}
