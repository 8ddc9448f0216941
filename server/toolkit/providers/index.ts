import type { Knex } from "knex";
import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import { createBlobStore } from "./blobs/index.ts";
import { createEmailProvider } from "./email/index.ts";
import { createEmbeddings } from "./embeddings/index.ts";
import { createImages } from "./images/index.ts";
import { createChatModel } from "./llm/index.ts";
import { createModeration } from "./moderation/index.ts";
import { createPayments } from "./payments/index.ts";
import { createSpeech } from "./speech/index.ts";
import type { Providers } from "./types.ts";

export type { Providers } from "./types.ts";

/**
 * The configured providers, except those `given` (tests pass fakes or failing ones). Each loads the
 * client library of an outside service (openai, stripe, the S3 SDK, nodemailer) only when it is
 * configured: the offline default never loads them (these and the chat platforms' libraries, loaded
 * on use too, were 27 of an idle server's 63 MB of heap).
 */
export async function createProviders(config: Config, knex: Knex, log: Logger, given: Partial<Providers> = {}): Promise<Providers> {
  const [llm, embeddings, email, speech, images, blobs, payments, moderation] = await Promise.all([
    given.llm ?? createChatModel(config, log),
    given.embeddings ?? createEmbeddings(config, log),
    given.email ?? createEmailProvider({ smtpUrl: config.smtpUrl, from: config.mailFrom, secretsKey: config.secretsKey }, knex, log),
    given.speech ?? createSpeech(config, log),
    given.images ?? createImages(config, log),
    given.blobs ?? createBlobStore(config),
    given.payments ?? createPayments(config, knex),
    given.moderation ?? createModeration(config, log),
  ]);
  const providers = { llm, embeddings, email, speech, images, blobs, payments, moderation };
  // Each capability has its own provider setting (issue 34, item 9): say which one serves what.
  log.info({ chat: providers.llm.name, embeddings: providers.embeddings.name, speech: providers.speech.name, images: providers.images.name, blobs: providers.blobs.kind, moderation: providers.moderation.name }, "providers");
  return providers;
}
