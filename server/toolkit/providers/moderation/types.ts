/** What a moderation provider found in a set of texts: flagged when any of them is. */
export interface ModerationVerdict {
  flagged: boolean;
  /** The categories that flagged (`harassment`, `self-harm`, a word list's own headings), each once. */
  categories: string[];
}

/**
 * Checks user-written text before it is published (issue 41). `none` checks nothing and sends
 * nothing anywhere; throws `UpstreamError` (server/toolkit/providers/errors.ts) when a provider fails.
 */
export interface ModerationProvider {
  readonly name: "none" | "wordlist" | "openai";
  check(texts: readonly string[]): Promise<ModerationVerdict>;
}
