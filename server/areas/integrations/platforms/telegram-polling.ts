import { Api, GrammyError } from "grammy";
import type { Update } from "grammy/types";
import type { PlatformSettings } from "./types.ts";

/** Seconds one getUpdates call waits for news at the platform. */
export const POLL_SECONDS = 25;

/**
 * The messenger's long polling (`getUpdates` with an offset), for servers the platform cannot call.
 * `next` answers the updates after the last one handed out; a refused token or a webhook still set
 * (401, 404, 409) is a PollingRefused, which polling again will not cure.
 */
export class TelegramPoller {
  readonly #api: Api;
  #offset: number | undefined;

  constructor(settings: PlatformSettings, token: string) {
    this.#api = new Api(token, { apiRoot: settings.telegramApiUrl.replace(/(?<!\/)\/+$/, ""), timeoutSeconds: POLL_SECONDS + Math.ceil(settings.timeoutMs / 1000) });
  }

  async next(signal: AbortSignal): Promise<Update[]> {
    try {
      const updates = await this.#api.getUpdates({ timeout: POLL_SECONDS, allowed_updates: ["message"], ...(this.#offset !== undefined ? { offset: this.#offset } : {}) }, signal as Parameters<Api["getUpdates"]>[1]);
      const last = updates.at(-1);
      if (last) this.#offset = last.update_id + 1;
      return updates;
    } catch (error) {
      if (error instanceof GrammyError && [401, 404, 409].includes(error.error_code)) throw new PollingRefused(`Telegram refused getUpdates: ${error.description}`);
      throw error;
    }
  }
}

export class PollingRefused extends Error {
  override name = "PollingRefused";
}
