import type { Knex } from "knex";
import { addJobIn } from "./db/jobs.ts";
import { contentFlagged, providerFailure, replyFlagged } from "./http/error-catalogue.ts";
import type { Services } from "./services.ts";

// Checking user-written text before it is published (issue 41, docs/design/safety.md). The areas
// that publish text (personas, marketplace reviews, rooms, display names) call `screen`; the
// moderation provider is one of the providers (toolkit/providers/moderation). Flagged content that
// can wait for review is saved hidden by its own area, which queues `MODERATION_HOLD_TASK` in the
// same transaction; the safety area runs that task and puts the content in the review queue. So the
// areas that publish need not know the safety area, which knows them (an area's imports go one way).

/** The task that puts content held by the moderation provider into the review queue (the safety area runs it). */
export const MODERATION_HOLD_TASK = "moderation_hold";

/** What the moderation provider found. */
export interface ModerationFlag {
  provider: string;
  categories: string[];
}

/** Content that can wait for review hidden: what the safety area's queue takes it as. */
export type HoldableTarget = "persona" | "review";

export interface HeldContent {
  targetType: HoldableTarget;
  targetId: string;
  ownerId: string;
  flag: ModerationFlag;
}

/**
 * Checks `texts` with the configured moderation provider (nothing is sent with MODERATION_PROVIDER
 * unset). Unflagged: undefined. Flagged: 400 `content_flagged` when the server refuses flagged
 * content (MODERATION_ACTION=refuse) or this content cannot wait for review (`holdable` false: room
 * messages and display names show the moment they are saved); otherwise the flag, and the caller
 * saves the content hidden and calls `holdForReview` in the same transaction. A failing provider
 * is 502, and nothing is saved.
 */
export async function screen(
  services: Services,
  what: { label: string; texts: readonly (string | null | undefined)[]; holdable: boolean },
): Promise<ModerationFlag | undefined> {
  const { moderation } = services.providers;
  if (moderation.name === "none") return undefined;
  const texts = what.texts.filter((text): text is string => typeof text === "string" && text.trim() !== "");
  if (texts.length === 0) return undefined;
  let verdict;
  try {
    verdict = await moderation.check(texts);
  } catch (error) {
    throw providerFailure(error);
  }
  if (!verdict.flagged) return undefined;
  const flag = { provider: moderation.name, categories: verdict.categories };
  if (!what.holdable || services.config.moderation.action === "refuse") {
    const about = flag.categories.length ? ` (${flag.categories.join(", ")})` : "";
    throw contentFlagged(`${what.label} was flagged by the content policy${about}: change it and try again`, { categories: flag.categories, provider: flag.provider });
  }
  return flag;
}

/**
 * Checks a model's reply before it is stored, when the server checks replies (MODERATION_CHECK_REPLIES,
 * off by default, and a provider configured). Flagged: 502 `reply_flagged` (with the reply's token
 * `usage` in its details), and the reply engine
 * stores nothing and gives the message back, as when the model fails. A failing provider throws
 * its own error, which the engine reports as the model's (502 `upstream_error`).
 */
export async function screenReply(services: Services, text: string, usage: { inputTokens: number; outputTokens: number }): Promise<void> {
  const { moderation } = services.providers;
  if (!services.config.moderation.checkReplies || moderation.name === "none" || text.trim() === "") return;
  const verdict = await moderation.check([text]);
  if (!verdict.flagged) return;
  const about = verdict.categories.length ? ` (${verdict.categories.join(", ")})` : "";
  // `usage`: what the withheld reply took (the OpenAI-compatible door reports it with `content_filter`).
  throw replyFlagged(`The reply was withheld by the content policy${about} and not stored; ask again`, {
    categories: verdict.categories,
    provider: moderation.name,
    usage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens },
  });
}

/** Queues the hold of content just saved hidden, in the transaction that saves it. */
export async function holdForReview(trx: Knex.Transaction, held: HeldContent): Promise<void> {
  await addJobIn(trx, MODERATION_HOLD_TASK, { ...held }, { maxAttempts: 25 });
}
