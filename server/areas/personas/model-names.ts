import type { Knex } from "knex";
import { queryTemplate, type SqlFragment } from "../../toolkit/db/query-template.ts";
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

// The same three queries, compiled once each (toolkit/db/query-template.ts): the door's hot path.
const byId = queryTemplate(["id", "viewer"], (knex, slot) => visiblePersonaQuery(knex, slot.id, slot.viewer));
const byOwnHandle = queryTemplate(["viewer", "handle"], (knex, slot) => ownPersonaByHandleQuery(knex, slot.viewer, slot.handle));
const byHandle = queryTemplate(["username", "handle", "viewer"], (knex, slot) => visiblePersonaByHandleQuery(knex, slot.username, slot.handle, slot.viewer));

/** `personaByModelNameQuery` as SQL to embed in another statement, without compiling a builder per call. */
export function personaByModelNameSql(services: Services, viewerId: string, name: string): SqlFragment {
  const { knex } = services.db;
  if (isUuid(name)) return byId(knex, { id: name, viewer: viewerId });
  const slash = name.indexOf("/");
  if (slash < 0) return byOwnHandle(knex, { viewer: viewerId, handle: name });
  return byHandle(knex, { username: name.slice(0, slash), handle: name.slice(slash + 1), viewer: viewerId });
}
