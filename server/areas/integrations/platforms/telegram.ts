import { autoRetry } from "@grammyjs/auto-retry";
import { Api, GrammyError, HttpError } from "grammy";
import { PlatformRefusal, PlatformUnavailable, type BotAccount, type PlatformClient, type PlatformSettings } from "./types.ts";

/** Longest `retry_after` waited out inside one call; beyond it the job's own backoff takes over. */
const MAX_WAIT_SECONDS = 30;

/**
 * The messenger platform (Telegram) through grammY's `Api`. The auto-retry transformer honours a
 * 429's `retry_after` (up to 30 s, 3 times). grammY keeps the token out of its error messages.
 */
export class TelegramClient implements PlatformClient {
  readonly #api: Api;

  constructor(settings: PlatformSettings, token: string, options: { retries?: number } = {}) {
    this.#api = new Api(token, { apiRoot: settings.telegramApiUrl.replace(/(?<!\/)\/+$/, ""), timeoutSeconds: Math.ceil(settings.timeoutMs / 1000) });
    const retries = options.retries ?? 3;
    if (retries > 0) {
      this.#api.config.use(autoRetry({ maxRetryAttempts: retries, maxDelaySeconds: MAX_WAIT_SECONDS, rethrowHttpErrors: true, rethrowInternalServerErrors: false }));
    }
  }

  async whoAmI(): Promise<BotAccount> {
    const me = (await call(() => this.#api.getMe())) as { id?: unknown; username?: unknown } | null;
    // An answer is checked before it is stored: a proxy or a broken platform may say ok with anything.
    if (typeof me?.id !== "number") throw new PlatformUnavailable("Telegram answered getMe without a bot id");
    return { id: String(me.id), username: typeof me.username === "string" ? me.username : null };
  }

  /** Points the bot's updates at `url`; the platform sends `secret` with each one. */
  async setWebhook(url: string, secret: string): Promise<void> {
    await call(() => this.#api.setWebhook(url, { secret_token: secret, allowed_updates: ["message"], drop_pending_updates: true }));
  }

  async deleteWebhook(): Promise<void> {
    await call(() => this.#api.deleteWebhook());
  }

  async send(chatId: string, text: string, replyTo?: string): Promise<string> {
    const options = replyTo ? { reply_parameters: { message_id: Number(replyTo), allow_sending_without_reply: true } } : {};
    const message = (await call(() => this.#api.sendMessage(chatId, text, options))) as { message_id?: unknown } | null;
    if (typeof message?.message_id !== "number") throw new PlatformUnavailable("Telegram answered sendMessage without a message id");
    return String(message.message_id);
  }
}

async function call<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    if (error instanceof GrammyError) {
      if (error.error_code >= 500) throw new PlatformUnavailable(`Telegram failed (${error.error_code})`);
      if (error.error_code === 429) throw new PlatformUnavailable(`Telegram rate limit: retry in ${error.parameters.retry_after ?? "?"} s`);
      throw new PlatformRefusal(`Telegram refused: ${error.description}`, error.error_code);
    }
    if (error instanceof HttpError) throw new PlatformUnavailable("Telegram could not be reached");
    throw new PlatformUnavailable("Telegram could not be reached");
  }
}
