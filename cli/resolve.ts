import type { PersonaClient } from "../sdk/src/index.ts";
import { CliError, EXIT, usageError } from "./errors.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string) => UUID.test(value);

/**
 * A persona given by id or, for people at a terminal, by the name of one of their own personas
 * (case-insensitive, exact). Ambiguous names are refused rather than guessed.
 */
export async function resolvePersonaId(client: PersonaClient, ref: string): Promise<string> {
  if (isUuid(ref)) return ref;
  const wanted = ref.trim().toLowerCase();
  const matches: { id: string; name: string }[] = [];
  for await (const persona of client.personas.list({ limit: 100 })) {
    if (persona.name.toLowerCase() === wanted) matches.push(persona);
  }
  if (matches.length === 1) return matches[0]!.id;
  if (matches.length === 0) throw new CliError(`no persona of yours is named "${ref}" (give its id instead)`, EXIT.notFound, "not_found");
  throw usageError(`${matches.length} of your personas are named "${ref}": give the id (${matches.map((m) => m.id).join(", ")})`);
}
