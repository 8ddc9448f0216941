import type { components } from "../../../generated/openapi.d.ts";

type S = components["schemas"];
export type Shelf = S["MarketplaceCategory"];

/**
 * The marketplace's shelves: the one category vocabulary that publishing files a listing under, the
 * categories endpoint lists and the list filters by (docs/adr/0290-one-shelf-vocabulary-for-the-marketplace.md).
 * The specification's six publish values are shelves of their own; typed by the contract's enum, so
 * a shelf added there fails the type check until it has its name here.
 */
export const SHELVES: Record<Shelf, { name: string; description: string }> = {
  assistant: { name: "Assistant", description: "Helpers for everyday tasks and questions." },
  creative: { name: "Creative", description: "Writers, artists and brainstorming partners." },
  education: { name: "Education", description: "Tutors, explainers and study partners." },
  entertainment: { name: "Entertainment", description: "Games, jokes and stories." },
  productivity: { name: "Productivity", description: "Planners, organisers and focus coaches." },
  roleplay: { name: "Roleplay", description: "Characters to play out scenes with." },
  companion: { name: "Companion", description: "Friendly company and conversation." },
  lifestyle: { name: "Lifestyle", description: "Coaches for cooking, fitness, travel and hobbies." },
  "developer-tools": { name: "Developer tools", description: "Code reviewers, debuggers and API helpers." },
  other: { name: "Other", description: "Everything else." },
};

/**
 * The shelf of each persona category, where publishing files a persona when the call names no
 * category. Typed by both contract enums: a new persona category fails the type check until it
 * has a shelf.
 */
export const SHELF_OF_PERSONA_CATEGORY: Record<S["PersonaCategory"], Shelf> = {
  assistant: "assistant",
  tutor: "education",
  character: "roleplay",
  coach: "lifestyle",
  companion: "companion",
  creative: "creative",
  developer: "developer-tools",
  other: "other",
};

/** The shelf of a stored persona category; `other` for a value the contract does not know. */
export function shelfOfPersonaCategory(category: string): Shelf {
  return Object.hasOwn(SHELF_OF_PERSONA_CATEGORY, category) ? SHELF_OF_PERSONA_CATEGORY[category as S["PersonaCategory"]] : "other";
}
