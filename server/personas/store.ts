import type { Knex } from "knex";

export interface PersonaRow {
  id: string;
  creator_id: string;
  name: string;
  description: string;
  instructions: string;
  model: string;
  avatar_url: string | null;
  is_public: boolean;
  category: string;
  greeting_message: string | null;
  voice_id: string;
  message_count: number;
  created_at: Date;
  updated_at: Date;
}

export async function findPersona(knex: Knex, id: string): Promise<PersonaRow | undefined> {
  return knex("personas").where({ id }).first();
}
