import type { BlobStore } from "./blobs/types.ts";
import type { EmailProvider } from "./email/types.ts";
import type { EmbeddingsProvider } from "./embeddings/types.ts";
import type { ImageProvider } from "./images/types.ts";
import type { ModerationProvider } from "./moderation/types.ts";
import type { PaymentsProvider } from "./payments/types.ts";
import type { ChatModelProvider } from "./llm/types.ts";
import type { SpeechProvider } from "./speech/types.ts";

/**
 * Every outside capability the service uses, one provider each, behind its own `types.ts`
 * interface. Speech, images, payments and platforms join here as their areas land. Tests replace
 * any of them through one option (`providers` in StartOptions).
 */
export interface Providers {
  /** The chat model (replies, titles, greetings). */
  llm: ChatModelProvider;
  embeddings: EmbeddingsProvider;
  email: EmailProvider;
  /** Text to speech and speech to text. */
  speech: SpeechProvider;
  /** Image generation (and automatic avatars). */
  images: ImageProvider;
  /** Where generated files are kept. */
  blobs: BlobStore;
  /** Subscriptions and their payment: Stripe, or the offline local checkout. */
  payments: PaymentsProvider;
  /** Checks text before it is published: none (the default), an offline word list, or OpenAI's moderation endpoint. */
  moderation: ModerationProvider;
}
