import type { Knex } from "knex";
import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import { createBlobStore } from "./blobs/index.ts";
import { createEmailProvider } from "./email/index.ts";
import { createEmbeddings } from "./embeddings/index.ts";
import { createImages } from "./images/index.ts";
import { createChatModel } from "./llm/index.ts";
import { createPayments } from "./payments/index.ts";
import { createSpeech } from "./speech/index.ts";
import type { Providers } from "./types.ts";

export type { Providers } from "./types.ts";

/** The configured providers, except those `given` (tests pass fakes or failing ones). */
export function createProviders(config: Config, knex: Knex, log: Logger, given: Partial<Providers> = {}): Providers {
  return {
    llm: given.llm ?? createChatModel(config),
    embeddings: given.embeddings ?? createEmbeddings(config),
    email: given.email ?? createEmailProvider({ smtpUrl: config.smtpUrl, from: config.mailFrom }, knex, log),
    speech: given.speech ?? createSpeech(config),
    images: given.images ?? createImages(config),
    blobs: given.blobs ?? createBlobStore(config),
    payments: given.payments ?? createPayments(config, knex),
  };
}
