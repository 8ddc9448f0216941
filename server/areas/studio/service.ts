import type { components } from "../../../generated/openapi.d.ts";
import { listingUrl, publish as publishListing } from "../marketplace/index.ts";
import type { Services } from "../../toolkit/services.ts";
import { analytics, type Period } from "./analytics.ts";
import { testChat } from "./test-chat.ts";
import { createVariant, listVariants, updateVariant } from "./variants.ts";
import { requireOwnPersona, type ModelSettings } from "../personas/index.ts";
import { activateVersion, createDraftVersion, listVersions, type InstructionVersionRow } from "../personas/index.ts";

type PublishInput = components["schemas"]["PublishInput"];

/*
 * The creator studio acts only on the caller's own personas: another user's persona is 404, public
 * or not. Instruction versions themselves belong to the personas area (server/areas/personas/versions.ts),
 * because creating and updating a persona records them too.
 */

export async function versionsOf(services: Services, userId: string, personaId: string): Promise<InstructionVersionRow[]> {
  const persona = await requireOwnPersona(services, userId, personaId);
  return listVersions(services, persona.id);
}

export async function createVersion(
  services: Services,
  userId: string,
  personaId: string,
  input: { instructions: string; changelog?: string; model_settings?: ModelSettings },
): Promise<InstructionVersionRow> {
  const persona = await requireOwnPersona(services, userId, personaId);
  return createDraftVersion(services, persona.id, input.instructions, input.changelog ?? "", input.model_settings ?? {});
}

export async function activate(services: Services, userId: string, personaId: string, versionId: string): Promise<InstructionVersionRow> {
  const persona = await requireOwnPersona(services, userId, personaId);
  return activateVersion(services, persona.id, versionId);
}

/** Lists the persona in the marketplace or updates its listing (the marketplace area owns listings). */
export async function publish(services: Services, userId: string, personaId: string, input: PublishInput) {
  const listing = await publishListing(services, userId, personaId, input);
  return { listing, url: listingUrl(services, listing.id) };
}

export async function variantsOf(services: Services, userId: string, personaId: string) {
  const persona = await requireOwnPersona(services, userId, personaId);
  return listVariants(services, persona.id);
}

export async function addVariant(
  services: Services,
  userId: string,
  personaId: string,
  input: { name: string; instructions: string; traffic_percentage: number; model_settings?: ModelSettings },
) {
  const persona = await requireOwnPersona(services, userId, personaId);
  return createVariant(services, persona.id, input);
}

export async function changeVariant(
  services: Services,
  userId: string,
  personaId: string,
  variantId: string,
  changes: { traffic_percentage?: number; model_settings?: ModelSettings },
) {
  const persona = await requireOwnPersona(services, userId, personaId);
  return updateVariant(services, persona.id, variantId, changes);
}

export async function runTestChat(services: Services, userId: string, personaId: string, input: { message: string; version_id?: string; model_settings?: ModelSettings }) {
  const persona = await requireOwnPersona(services, userId, personaId);
  return testChat(services, userId, persona, input);
}

export async function personaAnalytics(services: Services, userId: string, personaId: string, period: Period) {
  const persona = await requireOwnPersona(services, userId, personaId);
  return analytics(services, persona.id, period);
}
