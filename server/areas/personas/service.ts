import { queryTemplate, type SqlFragment } from "../../toolkit/db/query-template.ts";
export type { PersonaRow } from "./store.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";
import { v7 as uuidv7 } from "uuid";
import type { components } from "../../../generated/openapi.d.ts";
import { assertUnderCountLimit } from "../../quota/usage.ts";
import { conflict, forbidden, invalidField, notFound } from "../../toolkit/http/error-catalogue.ts";
import { isForeignKeyViolation, isUniqueViolation } from "../../toolkit/db/rows.ts";
import { freeHandleFor } from "./handles.ts";
import { storedLink } from "../../toolkit/links.ts";
import type { Services } from "../../toolkit/services.ts";
import { autoAvatars, enqueueAvatar } from "./avatar-job.ts";
import { enqueueGreeting } from "./greeting-job.ts";
import { isUuid } from "../../toolkit/http/text.ts";
import { holdForReview, screen, type ModerationFlag } from "../../toolkit/moderation.ts";
import { ratingsShownTo } from "./ratings.ts";
import { recordActiveVersion } from "./versions.ts";
import { checkModel } from "./model-limits.ts";
import { checkPersonaConnection } from "../models/index.ts";
import { modelRegistry } from "../../toolkit/models/index.ts";
import type { Knex } from "knex";
import {
  byLiveCreator,
  countPersonasOf,
  deleteOwnPersona,
  explorePublicPersonas,
  findPersona,
  findPublicPersona,
  findVisiblePersona,
  HANDLE_INDEX,
  insertPersona,
  listPersonasOf,
  personaIdsOf,
  personaNames,
  setPersonaRating,
  setPersonaTakenDown,
  updateOwnPersona,
  type ContentRating,
  type ExploreFilter,
  type ExploreSortKey,
  type PersonaChanges,
  type PersonaRow,
  type PersonaSortKey,
} from "./store.ts";

type PersonaCreate = components["schemas"]["PersonaCreate"];
type PersonaUpdate = components["schemas"]["PersonaUpdate"];


/** Ids of every persona the user created (`knex` may be a transaction: the data export reads one snapshot). */
export function personaIdsOfCreator(knex: Knex, userId: string): Promise<string[]> {
  return personaIdsOf(knex, userId);
}

/** A persona the caller may see: their own, or a public one of a live account. Anything else is 404. */
export async function requireVisiblePersona(services: Services, userId: string, personaId: string): Promise<PersonaRow> {
  const row = isUuid(personaId) ? await findVisiblePersona(services.db.knex, personaId, userId) : undefined;
  if (!row) throw notFound("Persona");
  return row;
}

/** A persona anyone may see, without a caller (a public page): public, of a live account. Anything else is 404. */
export async function requirePublicPersona(services: Services, personaId: string): Promise<PersonaRow> {
  const row = isUuid(personaId) ? await findPublicPersona(services.db.knex, personaId) : undefined;
  if (!row) throw notFound("Persona");
  return row;
}

/**
 * The names of these personas by id, visible to the caller or not: what a conversation's stored
 * greeting calls `{{char}}` stays the persona's name after it is made private (deleted ones are left out).
 */
export async function namesOfPersonas(services: Services, ids: readonly string[]): Promise<Map<string, string>> {
  return personaNames(services.db.knex, [...new Set(ids)]);
}

/** A persona the caller owns. Another user's persona is 404, public or not (knowledge is owner-only). */
export async function requireOwnPersona(services: Services, userId: string, personaId: string): Promise<PersonaRow> {
  const row = isUuid(personaId) ? await findPersona(services.db.knex, personaId) : undefined;
  if (!row || row.creator_id !== userId) throw notFound("Persona");
  return row;
}

/**
 * A persona the caller is about to change or delete: 404 when they may not see it, 403 when they
 * may see it (it is public) but it is not theirs (DECISIONS: Errors).
 */
async function requireChangeablePersona(services: Services, userId: string, personaId: string): Promise<PersonaRow> {
  const row = await requireVisiblePersona(services, userId, personaId);
  if (row.creator_id !== userId) throw forbidden("Only the persona's creator may change or delete it");
  return row;
}


/** The personas counted against the plan's limit: the creation's 402 check and `GET /v1/billing/usage` both count with this. */
export function countPlanPersonas(knex: Knex, userId: string): Promise<number> {
  return countPersonasOf(knex, userId);
}

/**
 * Creates the caller's persona. The plan's persona limit is checked under a lock on the user's row
 * held until the insert commits, so concurrent creations cannot overshoot it. Without a greeting,
 * a job queued in the same transaction asks the model for one; without an avatar, another draws one.
 */
export async function createPersona(services: Services, userId: string, input: PersonaCreate, copy?: PersonaCopyOf): Promise<PersonaRow> {
  if (!copy) checkModel(services, input.model);
  await checkPersonaConnection(services, userId, input.provider_connection_id);
  const model = input.model ?? modelRegistry(services.config.llm).defaultId;
  // A new public persona is checked before it is published (issue 41); a private one when it is made public.
  const flag = input.is_public ? await screenPersona(services, input) : undefined;
  const now = services.now();
  const row = await services.db.knex.transaction(async (trx) => {
    await assertUnderCountLimit(trx, userId, "personas", () => countPlanPersonas(trx, userId));
    const inserted = await insertPersona(trx, {
      id: uuidv7(),
      creator_id: userId,
      name: input.name,
      // Under the creator's lock (the limit's): a free handle stays free until the insert commits.
      handle: input.handle ?? (await freeHandleFor(trx, userId, input.name)),
      model_settings: input.model_settings ?? {},
      description: input.description ?? "",
      instructions: input.instructions,
      model,
      // Checked above as the caller's; a connection deleted meanwhile fails the insert's foreign key (400 below).
      provider_connection_id: input.provider_connection_id ?? null,
      // A link to one of this service's images is kept as its path (server/toolkit/links.ts).
      avatar_url: input.avatar_url ? storedLink(services.config, input.avatar_url) : null,
      is_public: input.is_public ?? false,
      category: input.category ?? "other",
      greeting_message: input.greeting_message ?? null,
      voice_id: input.voice_id ?? "alloy",
      allow_client_system_messages: input.allow_client_system_messages ?? true,
      message_count: 0,
      created_at: now,
      updated_at: now,
      published_at: input.is_public ? now : null,
      source_listing_id: copy?.sourceListingId ?? null,
      content_rating: input.content_rating ?? "general",
      taken_down_at: flag ? now : null,
    });
    if (flag) await holdForReview(trx, { targetType: "persona", targetId: inserted.id, ownerId: userId, flag });
    if (copy) await copy.onCreated(trx, inserted);
    await recordActiveVersion(trx, inserted.id, inserted.instructions, now);
    if (inserted.greeting_message === null) await enqueueGreeting(trx, inserted.id);
    if (inserted.avatar_url === null && autoAvatars(services)) await enqueueAvatar(trx, inserted.id);
    return inserted;
  }).catch(handleTaken);
  return row;
}

/**
 * A persona made from something else (a marketplace listing's `use`, an imported character card):
 * the listing it came from, if any, and what to record with it in the same transaction.
 */
export interface PersonaCopyOf {
  sourceListingId?: string;
  onCreated: (trx: Knex.Transaction, persona: PersonaRow) => Promise<void>;
}

const CHANGEABLE = [
  "name",
  "description",
  "instructions",
  "model",
  "avatar_url",
  "is_public",
  "category",
  "greeting_message",
  "voice_id",
  "allow_client_system_messages",
  "handle",
  "model_settings",
  "content_rating",
  "provider_connection_id",
] as const;

/** The persona's public text, for the moderation provider (toolkit/moderation.ts). */
function screenPersona(services: Services, text: { name?: string; description?: string; instructions?: string; greeting_message?: string | null }) {
  return screen(services, { label: "The persona", texts: [text.name, text.description, text.instructions, text.greeting_message], holdable: true });
}

/**
 * A handle another of the creator's personas has: 409, whichever statement found it. A provider
 * connection deleted between its check and the write: 400, as if it had been gone at the check.
 */
function handleTaken(error: unknown): never {
  if (isUniqueViolation(error, HANDLE_INDEX)) throw conflict("Another of your personas has this handle", { field: "handle" });
  if (isForeignKeyViolation(error, "personas_provider_connection_id_foreign")) throw invalidField("/body/provider_connection_id", "is not one of your provider connections");
  throw error;
}

/** Changes only the supplied fields; an update that supplies none changes nothing, not even `updated_at`. */
export async function updatePersona(services: Services, userId: string, personaId: string, input: PersonaUpdate): Promise<PersonaRow> {
  const current = await requireChangeablePersona(services, userId, personaId);
  checkModel(services, input.model);
  await checkPersonaConnection(services, userId, input.provider_connection_id);
  const changes: PersonaChanges = {};
  for (const key of CHANGEABLE) {
    if (input[key] !== undefined) (changes as Record<string, unknown>)[key] = input[key];
  }
  if (changes.avatar_url) changes.avatar_url = storedLink(services.config, changes.avatar_url);
  if (Object.keys(changes).length === 0) return current;
  const now = services.now();
  // Made public again: the feed shows it as new from now.
  if (changes.is_public && !current.is_public) changes.published_at = now;
  const flag = await screenChange(services, current, changes);
  const row = await services.db.knex.transaction(async (trx) => {
    const updated = await updateOwnPersona(trx, current.id, userId, { ...changes, updated_at: now });
    // Held for review: hidden at once, in the queue once the hold task runs.
    if (updated && flag && !updated.taken_down_at) {
      await setPersonaTakenDown(trx, updated.id, now);
      updated.taken_down_at = now;
      await holdForReview(trx, { targetType: "persona", targetId: updated.id, ownerId: userId, flag });
    }
    // New instructions are a new active version
    // (docs/adr/0104-instruction-versions-the-active-version-is-the-persona-s.md).
    if (updated && changes.instructions !== undefined && changes.instructions !== current.instructions) {
      await recordActiveVersion(trx, updated.id, changes.instructions, now);
    }
    return updated;
  }).catch(handleTaken);
  if (!row) throw notFound("Persona");
  return row;
}

export async function deletePersona(services: Services, userId: string, personaId: string): Promise<string> {
  const current = await requireChangeablePersona(services, userId, personaId);
  if (!(await deleteOwnPersona(services.db.knex, current.id, userId))) throw notFound("Persona");
  return current.id;
}

export async function listOwnPersonas(services: Services, userId: string, sort: PersonaSortKey, page: PageWindow) {
  return listPersonasOf(services.db.knex, userId, sort, page);
}

/**
 * Public personas of every creator, the caller's own included, of the ratings the caller is shown
 * (ratings.ts). Blank free text filters nothing.
 */
export async function explorePersonas(services: Services, viewerId: string, filter: Omit<ExploreFilter, "ratings">, sort: ExploreSortKey, page: PageWindow) {
  const q = filter.q?.trim();
  const ratings = await ratingsShownTo(services, viewerId);
  return explorePublicPersonas(services.db.knex, { ...filter, q: q ? q : undefined, ratings }, sort, page);
}

/**
 * A change to check before it is saved: one that leaves the persona public and makes it public or
 * changes its text (what others read). The text checked is the persona as it will be.
 */
async function screenChange(services: Services, current: PersonaRow, changes: PersonaChanges): Promise<ModerationFlag | undefined> {
  const publicAfter = changes.is_public ?? current.is_public;
  const textChanged = (["name", "description", "instructions", "greeting_message"] as const).some((key) => changes[key] !== undefined && changes[key] !== current[key]);
  if (!publicAfter || (current.is_public && !textChanged)) return undefined;
  return screenPersona(services, { ...current, ...changes });
}

// ---------------------------------------------------------------- trust and safety (issue 41)

/** Any persona by id, whatever its state (the safety area's snapshots and takedowns); undefined when none. */
export async function findAnyPersona(services: Services, personaId: string): Promise<PersonaRow | undefined> {
  return isUuid(personaId) ? findPersona(services.db.knex, personaId) : undefined;
}

/** Takes a persona down from every public place (`at`) or puts it back (null); false when it does not exist. */
export async function setPersonaTakedown(services: Services, personaId: string, at: Date | null): Promise<boolean> {
  return isUuid(personaId) && setPersonaTakenDown(services.db.knex, personaId, at);
}

/** An operator's change of a persona's rating; its listing follows (migration 0034). Undefined when it does not exist. */
export async function changePersonaRating(services: Services, personaId: string, rating: ContentRating): Promise<PersonaRow | undefined> {
  return isUuid(personaId) ? setPersonaRating(services.db.knex, personaId, rating) : undefined;
}

// `personas as p` limited to what the viewer may see (their own, or public with a live creator).
const visibleToViewer = queryTemplate(["viewer"], (knex, slot) =>
  knex("personas as p").where((visible) => visible.where("p.creator_id", slot.viewer).orWhere((shared) => onlyLiveCreators(shared.where("p.is_public", true)))),
);

/**
 * The personas `viewerId` may see (their own, or public with a live creator), every column, as SQL
 * another area puts in its own statement (the chat hot path's one round trip), compiled once.
 */
export function visiblePersonasSql(services: Services, viewerId: string): SqlFragment {
  return visibleToViewer(services.db.knex, { viewer: viewerId });
}

/**
 * Limits `query` over `personas as <alias>` to personas that may be shown beyond their owner: not
 * taken down, of live (neither deleted nor suspended) accounts, as every public place does.
 */
export function onlyLiveCreators(query: Knex.QueryBuilder, alias = "p"): Knex.QueryBuilder {
  return byLiveCreator(query, alias);
}
