import type { ServerResponse } from "node:http";
import { slackSignature } from "../../../server/areas/integrations/signatures.ts";
import { nextId, sendJson, startHttp, type Injected, type PlatformRequest } from "./http.ts";

/**
 * A fake workspace platform: the Slack Web API (`/api/<method>`, form or JSON bodies, the token as a
 * Bearer header, answers `{ok: true, ...}` or `{ok: false, error}`; a 429 carries `Retry-After`),
 * and signed Events API callbacks (`event`): the v0 signature over the exact bytes sent.
 */
export interface FakeSlackBot {
  token: string;
  userId: string;
  botId: string;
  teamId: string;
}

export interface FakeSlack {
  url: string;
  requests: PlatformRequest[];
  calls: (method: string) => PlatformRequest[];
  addBot: (bot?: Partial<FakeSlackBot>) => FakeSlackBot;
  /** POSTs a callback to `url` signed with `signingSecret` (or a forged signature); answers status and JSON. */
  event: (url: string, body: Record<string, unknown>, signingSecret: string, options?: { forge?: boolean; timestamp?: number }) => Promise<{ status: number; json: unknown }>;
  inject: (answer: Injected) => void;
  close: () => Promise<void>;
}

export async function startFakeSlack(): Promise<FakeSlack> {
  const bots = new Map<string, FakeSlackBot>();
  const route = (request: PlatformRequest, res: ServerResponse) => {
    const method = request.path.replace(/^\/api\//, "");
    const auth = String(request.headers.authorization ?? "");
    const token = auth.startsWith("Bearer ") ? auth.slice(7) : String(request.body.token ?? "");
    const bot = bots.get(token);
    if (!bot) return sendJson(res, 200, { ok: false, error: token ? "invalid_auth" : "not_authed" });
    switch (method) {
      case "auth.test":
        return sendJson(res, 200, { ok: true, url: "https://test.slack.example/", team: "Test team", user: "persona-bot", team_id: bot.teamId, user_id: bot.userId, bot_id: bot.botId, is_enterprise_install: false });
      case "chat.postMessage": {
        const channel = String(request.body.channel ?? "");
        if (!channel.startsWith("C") && !channel.startsWith("D")) return sendJson(res, 200, { ok: false, error: "channel_not_found" });
        const ts = `${Math.floor(Date.now() / 1000)}.${nextId(0n).padStart(6, "0").slice(-6)}`;
        return sendJson(res, 200, { ok: true, channel, ts, message: { type: "message", text: request.body.text, user: bot.userId, bot_id: bot.botId, ts } });
      }
      default:
        return sendJson(res, 200, { ok: false, error: "unknown_method" });
    }
  };
  const http = await startHttp(route);
  let n = 0;
  return {
    url: `${http.url}/api/`,
    requests: http.requests,
    calls: (method) => http.requests.filter((r) => r.path === `/api/${method}`),
    addBot: (given = {}) => {
      n += 1;
      const bot = { token: given.token ?? `xoxb-4102938475-fake-${n}`, userId: given.userId ?? `U0BOT${n}`, botId: given.botId ?? `B0BOT${n}`, teamId: given.teamId ?? "T04A7QX2M9" };
      bots.set(bot.token, bot);
      return bot;
    },
    event: async (url, body, signingSecret, options = {}) => {
      const raw = JSON.stringify(body);
      const timestamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
      const signature = options.forge ? `v0=${"0".repeat(64)}` : slackSignature(signingSecret, timestamp, raw);
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", "x-slack-signature": signature, "x-slack-request-timestamp": timestamp },
        body: raw,
      });
      const text = await response.text();
      return { status: response.status, json: text ? JSON.parse(text) : undefined };
    },
    inject: http.inject,
    close: http.close,
  };
}

let eventNumber = 0;
/** An `event_callback` carrying a channel message as the platform sends it. */
export function slackMessageEvent(options: { teamId?: string; channel: string; text: string; user?: string; type?: "message" | "app_mention"; channelType?: "channel" | "im"; botId?: string; subtype?: string; eventId?: string; ts?: string }): Record<string, unknown> {
  eventNumber += 1;
  const ts = options.ts ?? `${Math.floor(Date.now() / 1000)}.${String(100000 + eventNumber)}`;
  return {
    token: "verification-token-unused",
    team_id: options.teamId ?? "T04A7QX2M9",
    api_app_id: "A0APP",
    type: "event_callback",
    event_id: options.eventId ?? `Ev0${eventNumber}`,
    event_time: Math.floor(Date.now() / 1000),
    event: {
      type: options.type ?? "message",
      channel: options.channel,
      user: options.user ?? "U0HUMAN",
      text: options.text,
      ts,
      channel_type: options.channelType ?? "channel",
      ...(options.botId ? { bot_id: options.botId } : {}),
      ...(options.subtype ? { subtype: options.subtype } : {}),
    },
  };
}
