import type { ServerResponse } from "node:http";
import { nextId, sendJson, startHttp, type Injected, type PlatformRequest } from "./http.ts";

/**
 * A fake messenger platform: the Telegram Bot API (`/bot<token>/<method>`, JSON answers
 * `{ok, result}` or `{ok: false, error_code, description, parameters}`) with webhook delivery:
 * `deliver` POSTs an update to the registered webhook with its `X-Telegram-Bot-Api-Secret-Token`.
 */
export interface FakeTelegramBot {
  token: string;
  id: number;
  username: string;
}

export interface FakeTelegram {
  url: string;
  requests: PlatformRequest[];
  /** The bot's calls of one method, e.g. `sendMessage`. */
  calls: (method: string) => PlatformRequest[];
  addBot: (bot?: Partial<FakeTelegramBot>) => FakeTelegramBot;
  webhookOf: (token: string) => { url: string; secret: string } | undefined;
  /** Queues an update for the bot's long polling (`getUpdates`), as the platform keeps them while no webhook is set. */
  enqueue: (token: string, update: Record<string, unknown>) => void;
  /** POSTs an update to the bot's webhook as the platform would; answers the status. */
  deliver: (token: string, update: Record<string, unknown>, options?: { secret?: string | null }) => Promise<number>;
  inject: (answer: Injected) => void;
  close: () => Promise<void>;
}

export async function startFakeTelegram(): Promise<FakeTelegram> {
  const bots = new Map<string, FakeTelegramBot>();
  const webhooks = new Map<string, { url: string; secret: string }>();
  const pending = new Map<string, Record<string, unknown>[]>();
  const waiting = new Map<string, (() => void)[]>();
  const wake = (token: string) => {
    for (const resolve of waiting.get(token) ?? []) resolve();
    waiting.delete(token);
  };
  const ok = (res: ServerResponse, result: unknown) => sendJson(res, 200, { ok: true, result });
  const route = async (request: PlatformRequest, res: ServerResponse) => {
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(request.path);
    if (!match) return sendJson(res, 404, { ok: false, error_code: 404, description: "Not Found" });
    const [, token, method] = match as unknown as [string, string, string];
    const bot = bots.get(token);
    if (!bot) return sendJson(res, 401, { ok: false, error_code: 401, description: "Unauthorized" });
    const body = request.body;
    switch (method) {
      case "getMe":
        return ok(res, { id: bot.id, is_bot: true, first_name: bot.username, username: bot.username, can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false });
      case "setWebhook":
        webhooks.set(token, { url: String(body.url), secret: String(body.secret_token ?? "") });
        return ok(res, true);
      case "deleteWebhook":
        webhooks.delete(token);
        return ok(res, true);
      case "getUpdates": {
        if (webhooks.has(token)) return sendJson(res, 409, { ok: false, error_code: 409, description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first" });
        // An offset confirms every update before it, as on the platform.
        const offset = Number(body.offset ?? 0);
        const queue = (pending.get(token) ?? []).filter((update) => Number(update.update_id) >= offset);
        pending.set(token, queue);
        if (!queue.length) {
          const seconds = Math.min(Number(body.timeout ?? 0), 25);
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, seconds * 1000);
            waiting.set(token, [...(waiting.get(token) ?? []), () => (clearTimeout(timer), resolve())]);
            res.once("close", () => (clearTimeout(timer), resolve()));
          });
        }
        if (res.destroyed) return;
        return ok(res, pending.get(token) ?? []);
      }
      case "sendMessage": {
        if (String(body.chat_id) === "404") return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: chat not found" });
        const id = Number(nextId(0n));
        return ok(res, { message_id: id, date: Math.floor(Date.now() / 1000), chat: { id: Number(body.chat_id), type: "private" }, text: body.text });
      }
      default:
        return sendJson(res, 404, { ok: false, error_code: 404, description: "Not Found: method not found" });
    }
  };
  const http = await startHttp(route);
  let botNumber = 0;
  return {
    url: http.url,
    requests: http.requests,
    calls: (method) => http.requests.filter((r) => r.path.endsWith(`/${method}`)),
    addBot: (given = {}) => {
      botNumber += 1;
      const id = given.id ?? 7310459900 + botNumber;
      const bot = { id, username: given.username ?? `persona_test_${botNumber}_bot`, token: given.token ?? `${id}:AAH${"x".repeat(8)}${botNumber}fake` };
      bots.set(bot.token, bot);
      return bot;
    },
    webhookOf: (token) => webhooks.get(token),
    enqueue: (token, update) => {
      pending.set(token, [...(pending.get(token) ?? []), update]);
      wake(token);
    },
    deliver: async (token, update, options = {}) => {
      const hook = webhooks.get(token);
      if (!hook) throw new Error("no webhook registered for this bot");
      const secret = options.secret === undefined ? hook.secret : options.secret;
      const response = await fetch(hook.url, {
        method: "POST",
        headers: { "content-type": "application/json", ...(secret !== null ? { "x-telegram-bot-api-secret-token": secret } : {}) },
        body: JSON.stringify(update),
      });
      await response.arrayBuffer();
      return response.status;
    },
    inject: http.inject,
    close: http.close,
  };
}

let updateId = 800000000;
/** A text message update as the platform sends it. */
export function telegramTextUpdate(options: { chatId: number; text: string; chatType?: "private" | "group" | "supergroup"; fromId?: number; isBot?: boolean; firstName?: string; entities?: unknown[]; replyToFrom?: number; updateId?: number }): Record<string, unknown> {
  updateId += 1;
  const from = { id: options.fromId ?? 81234567, is_bot: options.isBot ?? false, first_name: options.firstName ?? "Ada" };
  return {
    update_id: options.updateId ?? updateId,
    message: {
      message_id: updateId % 100000,
      date: Math.floor(Date.now() / 1000),
      chat: options.chatType && options.chatType !== "private" ? { id: options.chatId, type: options.chatType, title: "Test group" } : { id: options.chatId, type: "private", first_name: from.first_name },
      from,
      text: options.text,
      ...(options.entities ? { entities: options.entities } : {}),
      ...(options.replyToFrom ? { reply_to_message: { message_id: 1, date: 0, chat: { id: options.chatId, type: "group" }, from: { id: options.replyToFrom, is_bot: true, first_name: "bot" }, text: "earlier" } } : {}),
    },
  };
}
