import type { components } from "../../../generated/openapi.d.ts";
import { invalidField } from "../../toolkit/http/error-catalogue.ts";
import { firstProblem } from "./json-check.ts";

// Character Card V2/V3 <-> persona: the field mapping of docs/design/cards.md.

type Schemas = components["schemas"];
export type CardData = Schemas["CharacterCardData"];
export type CharacterBook = Schemas["CharacterBook"];
export type CharacterCardV3 = Schemas["CharacterCardV3"];

/** The card texts the instructions are built from, in the order they appear there. */
export const SOURCE_FIELDS = ["system_prompt", "description", "personality", "scenario", "post_history_instructions"] as const;
export type CardSource = Record<(typeof SOURCE_FIELDS)[number], string>;

const HEADINGS: Record<(typeof SOURCE_FIELDS)[number], string | null> = {
  system_prompt: null,
  description: "Description",
  personality: "Personality",
  scenario: "Scenario",
  post_history_instructions: "Post-history instructions",
};

/** The service's own extension: what a card cannot say but a persona has. */
export const OWN_EXTENSION = "persona";

/**
 * What a card may carry. The lorebook's keys are bounded for the cost of matching them on every
 * reply (issue 31 H2), the nesting for JSON.stringify, which recurses (issue 31 L4). Real cards stay
 * far below: a big real lorebook has a few hundred entries of a handful of keys, each a name or a
 * short phrase, and card tools nest extensions a few levels deep
 * (docs/adr/0161-lorebook-limits-refused-at-import.md,
 * docs/adr/0166-card-json-at-most-64-levels-deep-and-only-text-postgresql.md).
 */
export const LIMITS = {
  name: 80,
  description: 300,
  instructions: 32_000,
  greeting: 32_000,
  alternateGreetings: 100,
  entries: 2_000,
  /** `keys` and `secondary_keys` of one entry together. */
  keysPerEntry: 100,
  /** Keys of all the book's entries, secondary keys included. */
  keys: 10_000,
  /** Characters of one key. */
  keyLength: 100,
  /** Characters of all the book's keys together: what the matcher's automaton grows with. */
  keyCharacters: 100_000,
  /** Levels of objects and arrays in the card's JSON, the file's top object being the first. */
  depth: 64,
} as const;

const STRING_FIELDS = ["name", "description", "personality", "scenario", "first_mes", "mes_example", "creator_notes", "system_prompt", "post_history_instructions", "creator", "character_version", "nickname"] as const;

const codePoints = (text: string) => [...text].length;

function refuse(path: string, message: string): never {
  throw invalidField(path, message, `Invalid card: ${path.replace(/^\/file\//, "").replace(/\//g, ".")} ${message}`);
}

/** A property name as a JSON Pointer segment, cut short: a name can be as long as the file. */
const pointerSegment = (name: string) => (name.length > 100 ? `${name.slice(0, 100)}…` : name).replace(/~/g, "~0").replace(/\//g, "~1");

/**
 * The card field that holds a too-deep value: the field of the card, of its lorebook, or of one of
 * the book's entries (`data.extensions`, `data.character_book.entries.3.extensions`), not the
 * whole path down, which may be thousands of names long.
 */
function fieldHolding(path: readonly string[], nested: boolean): string {
  let end = nested && path[0] === "data" ? 1 : 0;
  if (path[end] === "character_book") {
    end++;
    if (path[end] === "entries") end += 2;
  }
  return `/file/${path.slice(0, end + 1).map(pointerSegment).join("/")}`;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

function stringList(value: unknown, path: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((item) => typeof item === "string")) refuse(path, "must be an array of strings");
  return value as string[];
}

/**
 * A card of any accepted shape (V3, V2, or V1 with its fields at the top) as V3 data, every field
 * present. 400 naming the field for anything of the wrong type, or a missing name.
 */
export function parseCard(json: unknown): CardData {
  if (!isObject(json)) refuse("/file", "must be a JSON object");
  const problem = firstProblem(json, LIMITS.depth);
  if (problem?.problem === "too_deep") refuse(fieldHolding(problem.path, json.spec !== undefined), `nests objects and arrays more than ${LIMITS.depth} levels deep (counted from the card's top), over a card's limit`);
  if (problem) refuse(["/file", ...problem.path.map(pointerSegment)].join("/"), problem.problem);
  let data: Record<string, unknown>;
  let base = "/file/data";
  if (json.spec === "chara_card_v3" || json.spec === "chara_card_v2") {
    if (!isObject(json.data)) refuse("/file/data", "must be an object");
    data = json.data;
  } else if (json.spec !== undefined) {
    refuse("/file/spec", "must be chara_card_v2 or chara_card_v3");
  } else {
    data = json;
    base = "/file";
  }
  for (const field of STRING_FIELDS) {
    if (data[field] !== undefined && data[field] !== null && typeof data[field] !== "string") refuse(`${base}/${field}`, "must be a string");
  }
  const text = (field: (typeof STRING_FIELDS)[number]) => (typeof data[field] === "string" ? (data[field] as string) : "");
  const name = text("name").trim();
  if (!name) refuse(`${base}/name`, "is required");
  if (data.extensions !== undefined && data.extensions !== null && !isObject(data.extensions)) refuse(`${base}/extensions`, "must be an object");
  const card: CardData = {
    name,
    description: text("description"),
    personality: text("personality"),
    scenario: text("scenario"),
    first_mes: text("first_mes"),
    mes_example: text("mes_example"),
    creator_notes: text("creator_notes"),
    system_prompt: text("system_prompt"),
    post_history_instructions: text("post_history_instructions"),
    alternate_greetings: stringList(data.alternate_greetings, `${base}/alternate_greetings`),
    tags: stringList(data.tags, `${base}/tags`),
    creator: text("creator"),
    character_version: text("character_version"),
    extensions: (data.extensions as Record<string, unknown> | undefined) ?? {},
    group_only_greetings: stringList(data.group_only_greetings, `${base}/group_only_greetings`),
  };
  if (data.character_book !== undefined && data.character_book !== null) card.character_book = parseBook(data.character_book, `${base}/character_book`);
  if (typeof data.nickname === "string") card.nickname = data.nickname;
  if (data.source !== undefined) card.source = stringList(data.source, `${base}/source`);
  for (const field of ["creation_date", "modification_date"] as const) {
    if (typeof data[field] === "number" && Number.isInteger(data[field])) card[field] = data[field] as number;
  }
  if (isObject(data.creator_notes_multilingual) && Object.values(data.creator_notes_multilingual).every((v) => typeof v === "string")) {
    card.creator_notes_multilingual = data.creator_notes_multilingual as Record<string, string>;
  }
  if (Array.isArray(data.assets) && data.assets.every(isObject)) card.assets = data.assets as Record<string, unknown>[];
  checkLimits(card, base);
  return card;
}

function parseBook(value: unknown, path: string): CharacterBook {
  if (!isObject(value)) refuse(path, "must be an object");
  if (!Array.isArray(value.entries)) refuse(`${path}/entries`, "must be an array");
  if (value.entries.length > LIMITS.entries) refuse(`${path}/entries`, `must have at most ${LIMITS.entries} entries`);
  const total = { keys: 0, characters: 0 };
  const entries = value.entries.map((entry: unknown, index: number) => {
    const at = `${path}/entries/${index}`;
    if (!isObject(entry)) refuse(at, "must be an object");
    if (typeof entry.content !== "string") refuse(`${at}/content`, "must be a string");
    const keys = stringList(entry.keys, `${at}/keys`);
    const secondary = stringList(entry.secondary_keys, `${at}/secondary_keys`);
    checkKeys(keys, secondary, at, total);
    const order = entry.insertion_order ?? 0;
    if (typeof order !== "number" || !Number.isFinite(order)) refuse(`${at}/insertion_order`, "must be a number");
    if (entry.position !== undefined && entry.position !== null && entry.position !== "before_char" && entry.position !== "after_char") {
      refuse(`${at}/position`, "must be before_char or after_char");
    }
    for (const flag of ["enabled", "case_sensitive", "selective", "constant", "use_regex"]) {
      if (entry[flag] !== undefined && entry[flag] !== null && typeof entry[flag] !== "boolean") refuse(`${at}/${flag}`, "must be a boolean");
    }
    // Unknown fields of an entry stay as they were; known ones of another type (often null) are dropped.
    return {
      ...withoutMistyped(entry, ENTRY_TYPES),
      keys,
      secondary_keys: secondary,
      content: entry.content,
      extensions: isObject(entry.extensions) ? entry.extensions : {},
      enabled: entry.enabled !== false,
      insertion_order: order,
    } as Schemas["CharacterBookEntry"];
  });
  for (const field of ["scan_depth", "token_budget"] as const) {
    if (value[field] !== undefined && value[field] !== null && (typeof value[field] !== "number" || !Number.isFinite(value[field]))) refuse(`${path}/${field}`, "must be a number");
  }
  return { ...withoutMistyped(value, BOOK_TYPES), extensions: isObject(value.extensions) ? value.extensions : {}, entries } as CharacterBook;
}

/** The limits on an entry's keys, and on the book's so far (`total`, which this adds the entry's to). */
function checkKeys(keys: readonly string[], secondary: readonly string[], at: string, total: { keys: number; characters: number }): void {
  const count = keys.length + secondary.length;
  if (count > LIMITS.keysPerEntry) refuse(`${at}/keys`, `and secondary_keys have ${count} keys, over the limit of ${LIMITS.keysPerEntry} keys an entry`);
  total.keys += count;
  if (total.keys > LIMITS.keys) refuse(`${at}/keys`, `bring the book's keys to ${total.keys}, over the limit of ${LIMITS.keys} keys a book`);
  for (const [field, list] of [["keys", keys], ["secondary_keys", secondary]] as const) {
    list.forEach((key, index) => {
      // UTF-16 length is at least the count of characters: a key no longer than the limit needs no count.
      const length = key.length > LIMITS.keyLength ? codePoints(key) : key.length;
      if (length > LIMITS.keyLength) refuse(`${at}/${field}/${index}`, `is ${length} characters, over the limit of ${LIMITS.keyLength} characters a key`);
      total.characters += codePoints(key);
    });
  }
  if (total.characters > LIMITS.keyCharacters) refuse(`${at}/keys`, `bring the book's keys to ${total.characters} characters, over the limit of ${LIMITS.keyCharacters} characters of keys a book`);
}

type Kind = "string" | "number" | "boolean" | "id";
const ENTRY_TYPES: Record<string, Kind> = { name: "string", comment: "string", priority: "number", id: "id", case_sensitive: "boolean", selective: "boolean", constant: "boolean", use_regex: "boolean", position: "string" };
const BOOK_TYPES: Record<string, Kind> = { name: "string", description: "string", scan_depth: "number", token_budget: "number", recursive_scanning: "boolean" };

const isKind = (value: unknown, kind: Kind) =>
  kind === "id" ? typeof value === "string" || (typeof value === "number" && Number.isFinite(value)) : kind === "number" ? typeof value === "number" && Number.isFinite(value) : typeof value === kind;

/** The object without the known fields whose value is not of their type (a `null` where a card tool wrote one). */
function withoutMistyped(value: Record<string, unknown>, types: Record<string, Kind>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).filter(([key, field]) => !(key in types) || isKind(field, types[key]!)));
}

function checkLimits(card: CardData, base: string): void {
  if (codePoints(card.name) > LIMITS.name) refuse(`${base}/name`, `must be at most ${LIMITS.name} characters (a persona's name limit)`);
  if (codePoints(card.first_mes) > LIMITS.greeting) refuse(`${base}/first_mes`, `must be at most ${LIMITS.greeting} characters`);
  if (card.alternate_greetings.length > LIMITS.alternateGreetings) refuse(`${base}/alternate_greetings`, `must have at most ${LIMITS.alternateGreetings} greetings`);
  const instructions = instructionsOf(card);
  const length = codePoints(instructions);
  if (length > LIMITS.instructions) {
    const parts = SOURCE_FIELDS.filter((field) => card[field]).map((field) => `${field} ${codePoints(card[field])}`);
    refuse(`${base}/${parts.length === 1 ? parts[0]!.split(" ")[0] : "description"}`, `and the other texts of the instructions (${parts.join(", ")} characters) make ${length} characters, over a persona's ${LIMITS.instructions}`);
  }
}

/**
 * `{{char}}` (and the older `<BOT>`) with the character's name: for the public description, which is
 * shown where no reply fills macros, and to recognise instructions built before they kept their
 * macros. Everything the model reads is filled by the reply engine instead (replies' `fillMacros`).
 */
export function withName(text: string, name: string): string {
  return text.replace(/\{\{char\}\}|<BOT>/gi, () => name);
}

/** Whether the card came from this service's export with the instructions as its system prompt alone. */
function instructionsInSystemPrompt(card: Pick<CardData, "extensions">): boolean {
  const own = card.extensions[OWN_EXTENSION];
  return isObject(own) && own.instructions_in === "system_prompt";
}

/**
 * The instructions: the system prompt first, then each other text under its heading; empty texts
 * are left out. A card with none of them gets a one-line instruction naming the character. Macros
 * stay as written: the reply engine fills them when it builds a reply.
 */
export function instructionsOf(card: CardSource & Pick<CardData, "name" | "extensions">): string {
  const fields = instructionsInSystemPrompt(card) ? (["system_prompt"] as const) : SOURCE_FIELDS;
  const sections = fields
    .filter((field) => card[field].trim())
    .map((field) => {
      const text = card[field].trim();
      return HEADINGS[field] ? `## ${HEADINGS[field]}\n${text}` : text;
    });
  return sections.length ? sections.join("\n\n") : `You are ${card.name}.`;
}

/** The persona's public description: the card's, as it is when it fits, else one line cut at a word with an ellipsis. */
export function publicDescription(card: Pick<CardData, "description" | "name">): string {
  const text = withName(card.description.trim(), card.name);
  if (codePoints(text) <= LIMITS.description) return text;
  const line = [...text.replace(/\s+/g, " ")].slice(0, LIMITS.description - 1).join("");
  const cut = line.lastIndexOf(" ");
  return `${(cut > LIMITS.description / 2 ? line.slice(0, cut) : line).trimEnd()}…`;
}

export function sourceOf(card: CardSource): CardSource {
  return Object.fromEntries(SOURCE_FIELDS.map((field) => [field, card[field]])) as CardSource;
}

const CATEGORIES = new Set(["assistant", "tutor", "character", "coach", "companion", "creative", "developer", "other"]);
const VOICES = new Set(["alloy", "echo", "fable", "nova", "onyx", "shimmer"]);

/** The service's own extension of a card (an export of ours), or `{}`. */
export function ownExtension(card: Pick<CardData, "extensions">): Record<string, unknown> {
  return isObject(card.extensions[OWN_EXTENSION]) ? (card.extensions[OWN_EXTENSION] as Record<string, unknown>) : {};
}

/** Category and voice from the service's own extension (an export of ours); a character otherwise. */
export function ownSettings(card: Pick<CardData, "extensions">): { category: Schemas["PersonaCategory"]; voice_id: Schemas["VoiceId"] } {
  const own = isObject(card.extensions[OWN_EXTENSION]) ? (card.extensions[OWN_EXTENSION] as Record<string, unknown>) : {};
  return {
    category: (typeof own.category === "string" && CATEGORIES.has(own.category) ? own.category : "character") as Schemas["PersonaCategory"],
    voice_id: (typeof own.voice_id === "string" && VOICES.has(own.voice_id) ? own.voice_id : "alloy") as Schemas["VoiceId"],
  };
}

/** The V2 fallback of a V3 card: the V2 fields only, V3 extras left out. */
export function toV2(card: CharacterCardV3): Record<string, unknown> {
  const { data } = card;
  const v2: Record<string, unknown> = {
    name: data.name,
    description: data.description,
    personality: data.personality,
    scenario: data.scenario,
    first_mes: data.first_mes,
    mes_example: data.mes_example,
    creator_notes: data.creator_notes,
    system_prompt: data.system_prompt,
    post_history_instructions: data.post_history_instructions,
    alternate_greetings: data.alternate_greetings,
    tags: data.tags,
    creator: data.creator,
    character_version: data.character_version,
    extensions: data.extensions,
  };
  if (data.character_book) v2.character_book = data.character_book;
  return { spec: "chara_card_v2", spec_version: "2.0", data: v2 };
}
