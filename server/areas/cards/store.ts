import type { Knex } from "knex";
import type { CardData, CardSource, CharacterBook } from "./mapping.ts";

/** What a card carries beyond the persona's own columns. */
export interface PersonaCardRow {
  persona_id: string;
  source: CardSource;
  alternate_greetings: string[];
  mes_example: string;
  tags: string[];
  creator: string;
  character_version: string;
  creator_notes: string;
  lorebook: CharacterBook | null;
  extensions: Record<string, unknown>;
  /** V3 fields kept only for export. */
  extra: Partial<Pick<CardData, "nickname" | "source" | "creation_date" | "modification_date" | "creator_notes_multilingual" | "assets" | "group_only_greetings">>;
  created_at: Date;
}

const JSON_COLUMNS = ["source", "alternate_greetings", "tags", "lorebook", "extensions", "extra"] as const;

export async function insertPersonaCard(knex: Knex, row: PersonaCardRow): Promise<void> {
  // jsonb values go as JSON text: the driver would turn a JavaScript array into a SQL array.
  const values: Record<string, unknown> = { ...row };
  for (const column of JSON_COLUMNS) values[column] = row[column] === null ? null : JSON.stringify(row[column]);
  await knex("persona_cards").insert(values);
}

export async function findPersonaCard(knex: Knex, personaId: string): Promise<PersonaCardRow | undefined> {
  return knex("persona_cards").where({ persona_id: personaId }).first();
}

/** The card's alternate greetings (a persona without a card has none). */
export async function findAlternateGreetings(knex: Knex, personaId: string): Promise<string[]> {
  const row: Pick<PersonaCardRow, "alternate_greetings"> | undefined = await knex("persona_cards").where({ persona_id: personaId }).first("alternate_greetings");
  return row?.alternate_greetings ?? [];
}

/**
 * What replies need of a card: its lorebook and sample messages, and the persona's name that
 * `{{char}}` stands for; undefined for a persona without a card.
 */
export async function findCardContext(knex: Knex, personaId: string): Promise<(Pick<PersonaCardRow, "lorebook" | "mes_example"> & { name: string }) | undefined> {
  return knex("persona_cards as c").join("personas as p", "p.id", "c.persona_id").where("c.persona_id", personaId).first("c.lorebook", "c.mes_example", "p.name");
}

/**
 * The card context of `persona` (an SQL expression naming a persona id) as a JSON value
 * (`{ lorebook, mes_example }`, or null without a card), for a statement of another area to read
 * with its own: a conversation's turn reads it in its one statement.
 */
export const cardContextSql = (persona: string) =>
  `(SELECT json_build_object('lorebook', pc.lorebook, 'mes_example', pc.mes_example) FROM persona_cards pc WHERE pc.persona_id = ${persona})`;

export async function insertCardAvatar(knex: Knex, row: { file_name: string; user_id: string; persona_id: string; created_at: Date }): Promise<void> {
  await knex("card_avatars").insert(row);
}

/** File names of the card avatars of these accounts (those the purge is about to remove). */
export async function cardAvatarFilesOf(knex: Knex, userIds: readonly string[]): Promise<string[]> {
  if (userIds.length === 0) return [];
  const rows = await knex("card_avatars").whereIn("user_id", userIds).select<{ file_name: string }[]>("file_name");
  return rows.map((row) => row.file_name);
}
