import { createHash } from "node:crypto";
import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";
import { invalidField, notFound } from "../../toolkit/http/error-catalogue.ts";
import type { ApiError } from "../../toolkit/http/errors.ts";
import { isUuid } from "../../toolkit/http/text.ts";
import type { Services } from "../../toolkit/services.ts";
import { settingsOver, type ModelSettings } from "../personas/index.ts";
import {
  assignedVariant,
  findVariant,
  fitsWithin100,
  insertAssignment,
  insertVariant,
  listVariantsOf,
  lockPersonaForVariants,
  trafficSum,
  updateVariantRow,
  variantMetrics,
  type VariantMetricsRow,
  type VariantRow,
} from "./store.ts";

/*
 * A/B variants (docs/adr/0173-a-b-variants-exact-shares-a-stable-assignment-per.md). Shares add up
 * to at most 100, checked under the persona's row lock so that concurrent writes cannot overshoot;
 * the rest of the traffic gets the active instructions. A new conversation is assigned once, when it starts, by a hash of
 * persona and conversation, and keeps its variant for life.
 */

export type VariantWithMetrics = VariantRow & { metrics: VariantMetricsRow };

const EMPTY: VariantMetricsRow = { message_count: 0, avg_rating: null, retention_rate: null };

function sumExceeded(): ApiError {
  const message = "The variants' traffic would exceed 100 in total; lower the other variants first";
  return invalidField("/body/traffic_percentage", "variants' total must not exceed 100", message);
}

export async function listVariants(services: Services, personaId: string): Promise<VariantWithMetrics[]> {
  const rows = await listVariantsOf(services.db.knex, personaId);
  const metrics = await variantMetrics(services.db.knex, rows.map((row) => row.id), services.now());
  return rows.map((row) => ({ ...row, metrics: metrics.get(row.id) ?? EMPTY }));
}

export async function createVariant(
  services: Services,
  personaId: string,
  input: { name: string; instructions: string; traffic_percentage: number; model_settings?: ModelSettings | undefined },
): Promise<VariantWithMetrics> {
  const now = services.now();
  const row = await services.db.knex.transaction(async (trx) => {
    await lockPersonaForVariants(trx, personaId);
    if (!(await fitsWithin100(trx, await trafficSum(trx, personaId), input.traffic_percentage))) throw sumExceeded();
    return insertVariant(trx, {
      id: uuidv7(),
      persona_id: personaId,
      name: input.name,
      instructions: input.instructions,
      traffic_percentage: input.traffic_percentage,
      created_at: now,
      updated_at: null,
      model_settings: input.model_settings ?? {},
    });
  });
  return { ...row, metrics: EMPTY };
}

/** Changes a variant's share (within the 100 of all shares), its settings, or both; only what is given. */
export async function updateVariant(
  services: Services,
  personaId: string,
  variantId: string,
  changes: { traffic_percentage?: number | undefined; model_settings?: ModelSettings | undefined },
): Promise<VariantWithMetrics> {
  if (!isUuid(variantId)) throw notFound("Variant");
  const now = services.now();
  const share = changes.traffic_percentage;
  if (share === undefined && changes.model_settings === undefined) throw invalidField("/body/traffic_percentage", "is required unless model_settings is given");
  const row = await services.db.knex.transaction(async (trx) => {
    await lockPersonaForVariants(trx, personaId);
    const current = await findVariant(trx, personaId, variantId);
    if (!current) throw notFound("Variant");
    if (share !== undefined && !(await fitsWithin100(trx, await trafficSum(trx, personaId, variantId), share))) throw sumExceeded();
    return updateVariantRow(trx, variantId, { share, settings: changes.model_settings }, now);
  });
  const metrics = await variantMetrics(services.db.knex, [row.id], now);
  return { ...row, metrics: metrics.get(row.id) ?? EMPTY };
}

/** Where in [0, 100) a conversation falls: the same for the same persona and conversation, always. */
export function trafficPoint(personaId: string, conversationId: string): number {
  const digest = createHash("sha256").update(`${personaId}:${conversationId}`).digest();
  return (digest.readUInt32BE(0) / 2 ** 32) * 100;
}

/** The variant whose share covers `point`, walking shares oldest first; none past their sum. */
export function pickVariant(variants: readonly VariantRow[], point: number): VariantRow | undefined {
  let upTo = 0;
  for (const variant of variants) {
    upTo += variant.traffic_percentage;
    if (point < upTo) return variant;
  }
  return undefined;
}

/** Assigns a new conversation, in its creating transaction; nothing is recorded for the active instructions. */
export async function assignConversation(trx: Knex.Transaction, conversation: { id: string; persona_id: string; user_id: string; created_at: Date }): Promise<void> {
  const variants = await listVariantsOf(trx, conversation.persona_id);
  const variant = pickVariant(variants, trafficPoint(conversation.persona_id, conversation.id));
  if (variant) await insertAssignment(trx, { conversation_id: conversation.id, variant_id: variant.id, user_id: conversation.user_id, created_at: conversation.created_at });
}

/** The persona as a conversation's replies see it: with its variant's instructions (and settings) when it has one. */
export async function personaForConversation<P extends { instructions: string; model_settings?: ModelSettings }>(services: Services, persona: P, conversationId: string): Promise<P> {
  const variant = await assignedVariant(services.db.knex, conversationId);
  return variant ? { ...persona, instructions: variant.instructions, model_settings: settingsOver(persona.model_settings, variant.model_settings) } : persona;
}
