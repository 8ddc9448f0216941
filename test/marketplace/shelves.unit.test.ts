import { describe, expect, it } from "vitest";
import { SHELF_OF_PERSONA_CATEGORY, SHELVES, shelfOfPersonaCategory } from "../../server/areas/marketplace/shelves.ts";
import { contract } from "../support/contract.ts";

// The one shelf vocabulary of the marketplace (docs/adr/0290-one-shelf-vocabulary-for-the-marketplace.md),
// held to the contract: what publish accepts, what the list filters by and what the categories
// endpoint names are the same slugs, and every persona category has a shelf.
const enumOf = (name: string) => (contract.components.schemas?.[name] as { enum?: string[] } | undefined)?.enum;

describe("marketplace shelves", () => {
  it("publish accepts exactly the shelves the marketplace lists and filters by", () => {
    const shelves = enumOf("MarketplaceCategory");
    expect(shelves).toHaveLength(10);
    expect(enumOf("PublishCategory")).toEqual(shelves);
    expect(Object.keys(SHELVES)).toEqual(shelves);
  });

  it("keeps the specification's six publish values and the categories endpoint's seven", () => {
    expect(enumOf("PublishCategory")).toEqual(expect.arrayContaining(["productivity", "education", "entertainment", "lifestyle", "developer-tools", "other"]));
    expect(enumOf("PublishCategory")).toEqual(expect.arrayContaining(["assistant", "creative", "education", "entertainment", "productivity", "roleplay", "companion"]));
  });

  it("maps every persona category onto a shelf, and an unknown one onto other", () => {
    expect(Object.keys(SHELF_OF_PERSONA_CATEGORY).sort()).toEqual([...enumOf("PersonaCategory")!].sort());
    for (const shelf of Object.values(SHELF_OF_PERSONA_CATEGORY)) expect(enumOf("MarketplaceCategory")).toContain(shelf);
    expect(shelfOfPersonaCategory("character")).toBe("roleplay");
    expect(shelfOfPersonaCategory("tutor")).toBe("education");
    expect(shelfOfPersonaCategory("developer")).toBe("developer-tools");
    expect(shelfOfPersonaCategory("wizard")).toBe("other");
    expect(shelfOfPersonaCategory("constructor")).toBe("other");
  });
});
