import type { Config } from "../../../toolkit/config.ts";

export type PlatformName = "forum" | "messenger" | "workspace";

/** The bot's own account on the platform, as its token check names it. */
export interface BotAccount {
  id: string;
  username: string | null;
  /** Workspace only: the workspace the token belongs to. */
  teamId?: string;
}

/**
 * The platform answered and said no (a refused token, an unknown channel, a missing permission).
 * `message` is the platform's own short reason, never anything carrying the token.
 */
export class PlatformRefusal extends Error {
  override name = "PlatformRefusal";
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}

/** The platform could not be reached, timed out or failed (5xx, a rate limit beyond what is waited out). */
export class PlatformUnavailable extends Error {
  override name = "PlatformUnavailable";
}

/** One bot on one platform: what the service asks of the platform's API. */
export interface PlatformClient {
  /** Checks the token: the bot's account, or PlatformRefusal when the token is refused. */
  whoAmI(): Promise<BotAccount>;
  /** Posts `text` in a channel or chat, in reply to a message when `replyTo` is given; answers the new message's id. */
  send(channelId: string, text: string, replyTo?: string): Promise<string>;
}

export type PlatformSettings = Config["integrations"];

/** Longest message each platform takes; longer replies are posted in parts. */
export const MESSAGE_LIMIT: Record<PlatformName, number> = { forum: 2000, messenger: 4096, workspace: 4000 };
