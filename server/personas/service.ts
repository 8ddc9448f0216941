import { notFound } from "../http/errors.ts";
import type { Services } from "../services.ts";
import { findPersona, type PersonaRow } from "./store.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A persona the caller may see: their own, or a public one. Anything else is 404. */
export async function requireVisiblePersona(services: Services, userId: string, personaId: string): Promise<PersonaRow> {
  const row = UUID.test(personaId) ? await findPersona(services.db.knex, personaId) : undefined;
  if (!row || (row.creator_id !== userId && !row.is_public)) throw notFound("Persona");
  return row;
}

/** A persona the caller owns. Another user's persona is 404, public or not (knowledge is owner-only). */
export async function requireOwnPersona(services: Services, userId: string, personaId: string): Promise<PersonaRow> {
  const row = UUID.test(personaId) ? await findPersona(services.db.knex, personaId) : undefined;
  if (!row || row.creator_id !== userId) throw notFound("Persona");
  return row;
}
