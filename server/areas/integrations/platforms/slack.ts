import { ErrorCode, LogLevel, WebClient, type Logger } from "@slack/web-api";
import { PlatformRefusal, PlatformUnavailable, type BotAccount, type PlatformClient, type PlatformSettings } from "./types.ts";

/** The library's own log lines are dropped: the service logs each failure once, without secrets. */
const quiet: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  setLevel: () => undefined,
  getLevel: () => LogLevel.ERROR,
  setName: () => undefined,
};

/**
 * The workspace platform (Slack) through @slack/web-api's WebClient, which waits out a 429 by its
 * `Retry-After` and retries (at most `retries` times, so a platform that is down fails fast).
 */
export class SlackClient implements PlatformClient {
  readonly #web: WebClient;

  constructor(settings: PlatformSettings, token: string, options: { retries?: number } = {}) {
    this.#web = new WebClient(token, {
      slackApiUrl: settings.slackApiUrl,
      timeout: settings.timeoutMs,
      retryConfig: { retries: options.retries ?? 3, factor: 2, minTimeout: 200, maxTimeout: 5_000 },
      logger: quiet,
      logLevel: LogLevel.ERROR,
    });
  }

  async whoAmI(): Promise<BotAccount> {
    const auth = await call(() => this.#web.auth.test());
    if (!auth.user_id || !auth.team_id) throw new PlatformUnavailable("Slack answered auth.test without a user or team");
    return { id: auth.user_id, username: auth.user ?? null, teamId: auth.team_id };
  }

  async send(channelId: string, text: string, replyTo?: string): Promise<string> {
    const posted = await call(() => this.#web.chat.postMessage({ channel: channelId, text, ...(replyTo ? { thread_ts: replyTo } : {}) }));
    if (!posted.ts) throw new PlatformUnavailable("Slack answered chat.postMessage without a message ts");
    return posted.ts;
  }
}

async function call<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    const failure = error as { code?: string; data?: { error?: string }; statusCode?: number; retryAfter?: number };
    switch (failure.code) {
      case ErrorCode.PlatformError:
        throw new PlatformRefusal(`Slack refused: ${failure.data?.error ?? "error"}`, 200);
      case ErrorCode.HTTPError:
        if (failure.statusCode && failure.statusCode < 500) throw new PlatformRefusal(`Slack refused (HTTP ${failure.statusCode})`, failure.statusCode);
        throw new PlatformUnavailable(`Slack failed (HTTP ${failure.statusCode ?? "?"})`);
      case ErrorCode.RateLimitedError:
        throw new PlatformUnavailable(`Slack rate limit: retry in ${failure.retryAfter ?? "?"} s`);
      default:
        throw new PlatformUnavailable("Slack could not be reached");
    }
  }
}
