import type { Knex } from "knex";
import * as foundation from "./0001_foundation.ts";
import * as accounts from "./0002_accounts.ts";
import * as oauth from "./0003_oauth.ts";
import * as dataExports from "./0004_data_exports.ts";
import * as personasConversations from "./0005_personas_conversations.ts";
import * as knowledge from "./0006_knowledge.ts";
import * as social from "./0007_social.ts";
import * as webhooks from "./0008_webhooks.ts";
import * as voiceImages from "./0009_voice_images.ts";
import * as rooms from "./0010_rooms.ts";
import * as studioMarketplace from "./0011_studio_marketplace.ts";
import * as billing from "./0012_billing.ts";
import * as integrations from "./0013_integrations.ts";
import * as marketplaceRollups from "./0014_marketplace_rollups.ts";
import * as roomEvents from "./0015_room_events.ts";
import * as generations from "./0016_generations.ts";
import * as conversationTree from "./0017_conversation_tree.ts";
import * as characterCards from "./0018_character_cards.ts";
import * as openaiCompat from "./0019_openai_compat.ts";
import * as generationLeases from "./0020_generation_leases.ts";
import * as socialReads from "./0022_social_reads.ts";
import * as quotaLeases from "./0023_quota_leases.ts";
import * as sealedSecrets from "./0024_sealed_secrets.ts";
import * as billingRaces from "./0025_billing_races.ts";
import * as knowledgeTruncation from "./0026_knowledge_truncation.ts";
import * as conversationGreetings from "./0027_conversation_greetings.ts";
import * as accountRestore from "./0030_account_restore.ts";
import * as relativeImageLinks from "./0031_relative_image_links.ts";
import * as personaHandlesAndModelSettings from "./0032_persona_handles_and_model_settings.ts";
import * as personaEmbeds from "./0033_persona_embeds.ts";
import * as trustAndSafety from "./0034_trust_and_safety.ts";
import * as models from "./0035_models.ts";
import * as traceContext from "./0036_trace_context.ts";
import * as roomReplyCosts from "./0037_room_reply_costs.ts";

/**
 * Every migration, in order. Listed here rather than discovered on disk so that they load the same
 * way under Node's type stripping, vitest and a bundler.
 */
const migrations: Record<string, Knex.Migration> = {
  "0001_foundation": foundation,
  "0002_accounts": accounts,
  "0003_oauth": oauth,
  "0004_data_exports": dataExports,
  "0005_personas_conversations": personasConversations,
  "0006_knowledge": knowledge,
  "0007_social": social,
  "0008_webhooks": webhooks,
  "0009_voice_images": voiceImages,
  "0010_rooms": rooms,
  "0011_studio_marketplace": studioMarketplace,
  "0012_billing": billing,
  "0013_integrations": integrations,
  "0014_marketplace_rollups": marketplaceRollups,
  "0015_room_events": roomEvents,
  "0016_generations": generations,
  "0017_conversation_tree": conversationTree,
  "0018_character_cards": characterCards,
  "0019_openai_compat": openaiCompat,
  "0020_generation_leases": generationLeases,
  "0022_social_reads": socialReads,
  "0023_quota_leases": quotaLeases,
  "0024_sealed_secrets": sealedSecrets,
  "0025_billing_races": billingRaces,
  "0026_knowledge_truncation": knowledgeTruncation,
  "0027_conversation_greetings": conversationGreetings,
  "0030_account_restore": accountRestore,
  "0031_relative_image_links": relativeImageLinks,
  "0032_persona_handles_and_model_settings": personaHandlesAndModelSettings,
  "0033_persona_embeds": personaEmbeds,
  "0034_trust_and_safety": trustAndSafety,
  "0035_models": models,
  "0036_trace_context": traceContext,
  "0037_room_reply_costs": roomReplyCosts,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};
