import { GeneratedStudio } from "../generated/resources.ts";

/**
 * The creator studio: instruction versions, test chat, A/B variants, analytics and publishing, for
 * the caller's own personas (another user's persona is a NotFoundError). Every method is generated
 * from the contract (GeneratedStudio).
 *
 * @example
 * const draft = await client.studio.createVersion(personaId, { instructions: "Be brief." });
 * const reply = await client.studio.testChat(personaId, { message: "Hi", version_id: draft.id });
 * await client.studio.activateVersion(personaId, draft.id);
 */
export class Studio extends GeneratedStudio {}
