import type { Knex } from "knex";
import { isUuid } from "../../toolkit/http/text.ts";
import type { Services } from "../../toolkit/services.ts";
import { creatorUsername, ownPersonaByHandleQuery, visiblePersonaByHandleQuery, visiblePersonaQuery, type PersonaRow } from "./store.ts";

/**
 * Personas named as OpenAI-compatible clients name models (issue 35, item 6): by id, by handle (the
 * caller's own personas), or as `<username>/<handle>` (anyone's the caller may see). A model picker
 * shows the readable form; the id keeps working for clients that stored it.
 */
export async function findPersonaByModelName(services: Services, viewerId: string, name: string): Promise<PersonaRow | undefined> {
  return personaByModelNameQuery(services, viewerId, name).first();
}

/**
 * `findPersonaByModelName`'s query: the persona's columns, at most one row, for a statement of
 * another area that reads it with more in one round trip (the OpenAI door's completion).
 */
export function personaByModelNameQuery(services: Services, viewerId: string, name: string): Knex.QueryBuilder {
  const { knex } = services.db;
  if (isUuid(name)) return visiblePersonaQuery(knex, name, viewerId);
  const slash = name.indexOf("/");
  if (slash < 0) return ownPersonaByHandleQuery(knex, viewerId, name);
  return visiblePersonaByHandleQuery(knex, name.slice(0, slash), name.slice(slash + 1), viewerId);
}

/** The readable model name of a persona for this viewer: its handle when it is theirs, else `<username>/<handle>`. */
export async function modelNameOf(services: Services, viewerId: string, persona: PersonaRow): Promise<string> {
  if (persona.creator_id === viewerId) return persona.handle;
  return `${await creatorUsername(services.db.knex, persona.creator_id)}/${persona.handle}`;
}
