import { conflict, invalidField } from "../../toolkit/http/error-catalogue.ts";
import type { Services } from "../../toolkit/services.ts";
import { requireOwnPersona, type PersonaRow } from "../personas/index.ts";
import { dailyMessages, findSettings, saveSettings, type EmbedSettingsRow } from "./store.ts";
import { utcDay } from "./limits.ts";

/** The visitors' daily message cap of a persona whose owner set none. */
export const DEFAULT_DAILY_MESSAGE_CAP = 200;

/** Most origins one persona may list. */
export const MAX_ORIGINS = 20;

/** A persona's settings: as saved, or the defaults (not enabled, no origin) when never saved. */
export interface EmbedSettings {
  enabled: boolean;
  allowedOrigins: string[];
  dailyMessageCap: number;
  updatedAt: Date | null;
}

export function settingsOf(row: EmbedSettingsRow | undefined): EmbedSettings {
  if (!row) return { enabled: false, allowedOrigins: [], dailyMessageCap: DEFAULT_DAILY_MESSAGE_CAP, updatedAt: null };
  return { enabled: row.enabled, allowedOrigins: row.allowed_origins, dailyMessageCap: row.daily_message_cap, updatedAt: row.updated_at };
}

/** Whether visitors can use the embed now: enabled, with an origin, on a public persona. */
export function isLive(settings: EmbedSettings, persona: Pick<PersonaRow, "is_public">): boolean {
  return settings.enabled && settings.allowedOrigins.length > 0 && persona.is_public;
}

/** What the owner reads: the settings, today's visitor messages, and the persona they are of. */
export interface OwnerSettings {
  persona: PersonaRow;
  settings: EmbedSettings;
  messagesToday: number;
}

/** The embed settings of one of the caller's personas; another user's persona is 404. */
export async function getOwnerSettings(services: Services, userId: string, personaId: string): Promise<OwnerSettings> {
  const persona = await requireOwnPersona(services, userId, personaId);
  const { knex } = services.db;
  const [row, messagesToday] = await Promise.all([findSettings(knex, persona.id), dailyMessages(knex, persona.id, utcDay(services.now()))]);
  return { persona, settings: settingsOf(row), messagesToday };
}

export interface SettingsChange {
  enabled?: boolean | undefined;
  allowed_origins?: string[] | undefined;
  daily_message_cap?: number | undefined;
}

/**
 * Changes the embed settings of one of the caller's personas. Origins are compared byte for byte
 * with what browsers send, so each must be written as one (`https://shop.example`, no path, no
 * trailing slash, no default port); duplicates are dropped. Only a public persona can be enabled
 * (409): embedding shows the persona to anyone on the listed sites.
 */
export async function updateOwnerSettings(services: Services, userId: string, personaId: string, change: SettingsChange): Promise<OwnerSettings> {
  const persona = await requireOwnPersona(services, userId, personaId);
  const { knex } = services.db;
  const current = await findSettings(knex, persona.id);
  const was = settingsOf(current);
  const origins = change.allowed_origins === undefined ? was.allowedOrigins : exactOrigins(change.allowed_origins);
  if (change.enabled === true && !persona.is_public) throw conflict("Only a public persona can be embedded: make it public first");
  const enabled = change.enabled ?? was.enabled;
  const now = services.now();
  const saved = await saveSettings(knex, {
    persona_id: persona.id,
    user_id: userId,
    enabled,
    allowed_origins: origins,
    daily_message_cap: change.daily_message_cap ?? was.dailyMessageCap,
    created_at: current?.created_at ?? now,
    updated_at: now,
  });
  return { persona, settings: settingsOf(saved), messagesToday: await dailyMessages(knex, persona.id, utcDay(now)) };
}

/** The origins as given, each checked to be an origin exactly as a browser sends it; duplicates dropped. */
export function exactOrigins(given: readonly string[]): string[] {
  const origins = new Set<string>();
  given.forEach((item, index) => {
    const path = `/body/allowed_origins/${index}`;
    const url = URL.canParse(item) ? new URL(item) : undefined;
    if (!url || (url.protocol !== "https:" && url.protocol !== "http:")) throw invalidField(path, "must be an http(s) origin");
    if (url.origin !== item) throw invalidField(path, `must be written as a browser sends it: ${url.origin}`);
    origins.add(item);
  });
  if (origins.size > MAX_ORIGINS) throw invalidField("/body/allowed_origins", `may list at most ${MAX_ORIGINS} origins`);
  return [...origins];
}
