import type { PersonaRow } from "../personas/index.ts";
import { instructionsOf, OWN_EXTENSION, withName, type CardData, type CharacterCardV3 } from "./mapping.ts";
import { tagsForRating } from "./rating.ts";
import type { PersonaCardRow } from "./store.ts";

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * A persona as a V3 card. Its owner gets everything: the card's own texts while the instructions
 * are still the ones they built, else the instructions as the system prompt alone (marked in the
 * service's extension, so that importing it back gives the same instructions). Anyone else gets
 * the public fields a marketplace listing shows.
 */
export function toCardV3(persona: PersonaRow, card: PersonaCardRow | undefined, owner: boolean): CharacterCardV3 {
  const ownBefore = card && isObject(card.extensions[OWN_EXTENSION]) ? (card.extensions[OWN_EXTENSION] as Record<string, unknown>) : {};
  const own: Record<string, unknown> = { ...ownBefore, category: persona.category, voice_id: persona.voice_id };
  const common = {
    name: persona.name,
    first_mes: persona.greeting_message ?? "",
    creator_notes: card?.creator_notes ?? "",
    alternate_greetings: card?.alternate_greetings ?? [],
    tags: tagsForRating(card?.tags ?? [], persona.content_rating),
    creator: card?.creator ?? "",
    character_version: card?.character_version ?? "",
    group_only_greetings: [],
    ...(card?.extra ?? {}),
  };
  if (!owner) {
    delete own.instructions_in;
    const data: CardData = {
      ...common,
      description: persona.description,
      personality: "",
      scenario: "",
      system_prompt: "",
      post_history_instructions: "",
      mes_example: "",
      extensions: { [OWN_EXTENSION]: own },
    };
    return { spec: "chara_card_v3", spec_version: "3.0", data };
  }
  // The owner's generation settings and model go with the card, for an import here to set them again (issue 40).
  own.model = persona.model;
  own.model_settings = persona.model_settings;
  const built = card && instructionsOf({ ...card.source, name: persona.name, extensions: card.extensions });
  // A card imported before instructions kept their macros has them with the name filled in.
  const unchanged = card !== undefined && (built === persona.instructions || withName(built!, persona.name) === persona.instructions);
  if (!unchanged) own.instructions_in = "system_prompt";
  const texts = unchanged
    ? card.source
    : { description: persona.description, system_prompt: persona.instructions, personality: "", scenario: "", post_history_instructions: "" };
  const data: CardData = {
    ...common,
    ...texts,
    mes_example: card?.mes_example ?? "",
    extensions: { ...(card?.extensions ?? {}), [OWN_EXTENSION]: own },
    ...(card?.lorebook ? { character_book: card.lorebook } : {}),
  };
  return { spec: "chara_card_v3", spec_version: "3.0", data };
}
