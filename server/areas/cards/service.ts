import type { Knex } from "knex";
import { invalidField, payloadTooLarge, unsupportedMediaType } from "../../toolkit/http/error-catalogue.ts";
import { ApiError } from "../../toolkit/http/errors.ts";
import { isUuid } from "../../toolkit/http/text.ts";
import { blobKey, FILES_PATH, newFileName } from "../images/index.ts";
import { imageFile } from "../images/index.ts";
import { createPersona, requireVisiblePersona, type PersonaRow } from "../personas/index.ts";
import type { Services } from "../../toolkit/services.ts";
import type { CardContext } from "./lorebook.ts";
import { instructionsOf, ownExtension, ownSettings, parseCard, publicDescription, sourceOf, toV2, type CardData, type CharacterCardV3 } from "./mapping.ts";
import { encodePng, findText, isPng, plainPng, PngError, readPng, textChunk, withChunks, withoutText, type Chunk } from "./png.ts";
import { cardAvatarFilesOf, findAlternateGreetings, findCardContext, findPersonaCard, insertCardAvatar, insertPersonaCard, type PersonaCardRow } from "./store.ts";
import { toCardV3 } from "./views.ts";
import { ratingOfTags } from "./rating.ts";
import { modelOfCard, settingsOfCard } from "./model-settings.ts";
import { modelRegistry } from "../../toolkit/models/index.ts";

/** A card's JSON: 2 MB (MiB), as the contract says. */
export const MAX_CARD_JSON_BYTES = 2 * 1024 * 1024;
/** A PNG card: 10 MB (MiB); the image is stored as the avatar. */
export const MAX_CARD_PNG_BYTES = 10 * 1024 * 1024;

const invalid = (message: string, path = "/body/file") => invalidField(path, message, message);

/** UTF-8 JSON text to a value; 400 for text that is not UTF-8 or not JSON. */
function parseJson(bytes: Uint8Array, what: string): unknown {
  if (bytes.byteLength > MAX_CARD_JSON_BYTES) throw payloadTooLarge(`${what} is over ${MAX_CARD_JSON_BYTES} bytes of JSON`);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw invalid(`${what} is not UTF-8 text`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalid(`${what} is not JSON`);
  }
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The card inside a PNG: its `ccv3` chunk, else its `chara` chunk, base64 of UTF-8 JSON. */
function cardOfPng(chunks: Chunk[]): unknown {
  const encoded = (findText(chunks, "ccv3") ?? findText(chunks, "chara"))?.replace(/\s+/g, "");
  if (encoded === undefined) throw invalid("The PNG carries no character card (no ccv3 or chara tEXt chunk)");
  if (!BASE64.test(encoded)) throw invalid("The PNG's card chunk is not base64");
  if ((encoded.length / 4) * 3 > MAX_CARD_JSON_BYTES + 3) throw payloadTooLarge(`The PNG's card is over ${MAX_CARD_JSON_BYTES} bytes of JSON`);
  return parseJson(Buffer.from(encoded, "base64"), "The PNG's card");
}

function startsLikeJson(bytes: Uint8Array): boolean {
  for (let i = 0; i < Math.min(bytes.length, 1024); i++) {
    const byte = bytes[i]!;
    if (byte === 0x7b || byte === 0x5b) return true;
    // Whitespace, or the UTF-8 byte order mark.
    if (![0x20, 0x09, 0x0a, 0x0d, 0xef, 0xbb, 0xbf].includes(byte)) return false;
  }
  return false;
}

/** A card file read: its data, and the PNG (text chunks removed) that becomes the avatar. */
interface ReadCard {
  card: CardData;
  avatar: Buffer | null;
}

/** Reads an uploaded card file, PNG or JSON by its content; nothing is stored. */
export function readCardFile(bytes: Uint8Array): ReadCard {
  if (isPng(bytes)) {
    if (bytes.byteLength > MAX_CARD_PNG_BYTES) throw payloadTooLarge(`A PNG card may be at most ${MAX_CARD_PNG_BYTES} bytes`);
    let chunks: Chunk[];
    try {
      chunks = readPng(bytes);
    } catch (error) {
      if (error instanceof PngError) throw error.status === 413 ? payloadTooLarge(error.message) : invalid(error.message);
      throw error;
    }
    return { card: parseCard(cardOfPng(chunks)), avatar: encodePng(withoutText(chunks)) };
  }
  if (startsLikeJson(bytes)) return { card: parseCard(parseJson(bytes, "The card")), avatar: null };
  throw unsupportedMediaType("A card must be a JSON file or a PNG image");
}

/**
 * Creates the caller's persona from a card file: everything is read and checked first, then the
 * avatar file is stored and the persona and its card row are written in one transaction; a refusal
 * there (the plan's persona limit) deletes the file again, so nothing is left half-written.
 */
export async function importCard(services: Services, userId: string, bytes: Uint8Array): Promise<PersonaRow> {
  const { card, avatar } = readCardFile(bytes);
  const fileName = avatar ? newFileName() : null;
  const now = services.now();
  if (avatar && fileName) await services.providers.blobs.put(blobKey(fileName), { bytes: avatar, contentType: "image/png" });
  const { category, voice_id } = ownSettings(card);
  const own = ownExtension(card);
  const registry = modelRegistry(services.config.llm);
  const named = modelOfCard(own);
  const model = named !== undefined && registry.has(named) ? named : registry.defaultId;
  const modelSettings = settingsOfCard(own);
  try {
    return await createPersona(
      services,
      userId,
      {
        name: card.name,
        description: publicDescription(card),
        instructions: instructionsOf(card),
        // As written: macros are filled where the greeting is shown and read, so the export gives it back.
        greeting_message: card.first_mes.trim() ? card.first_mes : undefined,
        ...(fileName ? { avatar_url: `${FILES_PATH}/${fileName}` } : {}),
        is_public: false,
        category,
        voice_id,
        // An export of ours carries its model and generation settings: the model when this server has it, the settings within its limits.
        model,
        ...(Object.keys(modelSettings).length > 0 ? { model_settings: modelSettings } : {}),
        // A card's NSFW tags make it `mature` (rating.ts).
        content_rating: ratingOfTags(card.tags),
      },
      { onCreated: (trx, persona) => storeCard(trx, persona, card, fileName, now) },
    );
  } catch (error) {
    if (fileName) await services.providers.blobs.delete(blobKey(fileName)).catch((failure: unknown) => services.log.warn({ err: failure }, "could not delete a refused card's avatar"));
    throw error;
  }
}

async function storeCard(trx: Knex.Transaction, persona: PersonaRow, card: CardData, fileName: string | null, now: Date): Promise<void> {
  const extra: Record<string, unknown> = {};
  for (const field of ["nickname", "source", "creation_date", "modification_date", "creator_notes_multilingual", "assets", "group_only_greetings"] as const) {
    if (card[field] !== undefined) extra[field] = card[field];
  }
  await insertPersonaCard(trx, {
    persona_id: persona.id,
    source: sourceOf(card),
    alternate_greetings: card.alternate_greetings,
    mes_example: card.mes_example,
    tags: card.tags,
    creator: card.creator,
    character_version: card.character_version,
    creator_notes: card.creator_notes,
    lorebook: card.character_book ?? null,
    extensions: card.extensions,
    extra,
    created_at: now,
  });
  if (fileName) await insertCardAvatar(trx, { file_name: fileName, user_id: persona.creator_id, persona_id: persona.id, created_at: now });
}

/** The card of a persona the caller may see (404 otherwise); everything for its owner, public fields for others. */
export async function exportCard(services: Services, userId: string, personaId: string): Promise<{ persona: PersonaRow; card: CharacterCardV3 }> {
  const persona = await requireVisiblePersona(services, userId, personaId);
  const row = await findPersonaCard(services.db.knex, persona.id);
  return { persona, card: toCardV3(persona, row, persona.creator_id === userId) };
}

const FILE_NAME = /^[0-9a-f]{32}\.png$/;

/** The persona's avatar as PNG chunks when it is a file this service stores; null otherwise (or when it is gone). */
async function storedAvatar(services: Services, persona: PersonaRow): Promise<Chunk[] | null> {
  // A link to one of this service's files is stored as its path (server/toolkit/links.ts).
  const prefix = `${FILES_PATH}/`;
  const url = persona.avatar_url;
  if (!url?.startsWith(prefix) || !FILE_NAME.test(url.slice(prefix.length))) return null;
  let bytes: Uint8Array;
  try {
    bytes = await imageFile(services, url.slice(prefix.length));
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
  try {
    return withoutText(readPng(bytes));
  } catch (error) {
    if (error instanceof PngError) return null;
    throw error;
  }
}

const base64Json = (value: unknown) => Buffer.from(JSON.stringify(value), "utf8").toString("base64");

/** The card as a PNG: the stored avatar or a plain image, with the V3 card (`ccv3`) and its V2 fallback (`chara`). */
export async function exportCardPng(services: Services, persona: PersonaRow, card: CharacterCardV3): Promise<Buffer> {
  const image = (await storedAvatar(services, persona)) ?? plainPng();
  return encodePng(withChunks(image, [textChunk("chara", base64Json(toV2(card))), textChunk("ccv3", base64Json(card))]));
}

/**
 * The card's alternate greetings that have text, in the card's order: a new conversation stores
 * them as alternatives of its greeting. None for a persona without a card.
 */
export async function alternateGreetingsOf(services: Services, personaId: string): Promise<string[]> {
  return (await findAlternateGreetings(services.db.knex, personaId)).filter((greeting) => greeting.trim() !== "");
}

/** What a reply's context takes from the persona's card; undefined for a persona that has none. */
export async function cardContextOf(services: Services, personaId: string): Promise<CardContext | undefined> {
  if (!isUuid(personaId)) return undefined;
  return toCardContext(await findCardContext(services.db.knex, personaId));
}

/** The same for the persona of the caller's own conversation, so it can be read before the persona is known. */
/** A card context read by another area's statement with `cardContextSql`. */
export function cardContextFromRow(row: Pick<PersonaCardRow, "lorebook" | "mes_example"> | null): CardContext | undefined {
  return toCardContext(row ?? undefined);
}

function toCardContext(row: Pick<PersonaCardRow, "lorebook" | "mes_example"> | undefined): CardContext | undefined {
  if (!row || (!row.lorebook?.entries.length && !row.mes_example.trim())) return undefined;
  // Macros as written: the reply engine fills them, with the name of the person it answers.
  return { lorebook: row.lorebook, examples: row.mes_example };
}

/** Deletes the card avatars' files of the accounts the purge is about to remove; one that fails is logged and left. */
export async function deleteCardAvatarsOf(services: Services, userIds: readonly string[]): Promise<void> {
  for (const name of await cardAvatarFilesOf(services.db.knex, userIds)) {
    await services.providers.blobs.delete(blobKey(name)).catch((error: unknown) => services.log.warn({ err: error, file: name }, "could not delete a purged account's card avatar"));
  }
}
