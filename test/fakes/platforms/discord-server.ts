import type { ServerResponse } from "node:http";
import { WebSocketServer, type WebSocket } from "ws";
import { nextId, sendJson, startHttp, type Injected, type PlatformRequest } from "./http.ts";

/**
 * A fake forum platform: Discord's REST API v10 (`/api/v10/...`, `Authorization: Bot <token>`,
 * errors `{message, code}`, 429 with `retry_after` in the body and `Retry-After` header) and its
 * gateway on `/gateway` (HELLO, IDENTIFY → READY, heartbeats and their ACKs, RESUME → replay of
 * what was missed then RESUMED, MESSAGE_CREATE dispatches), whose address `/gateway/bot` gives.
 */
export interface FakeDiscordBot {
  token: string;
  id: string;
  username: string;
  guilds: string[];
}

interface Session {
  id: string;
  bot: FakeDiscordBot;
  seq: number;
  /** Every dispatch sent in the session, for replay on resume. */
  sent: { s: number; t: string; d: unknown }[];
  socket: WebSocket | undefined;
}

export interface FakeDiscord {
  url: string;
  /** The `DISCORD_API_URL` to configure (REST base, without the version). */
  apiUrl: string;
  requests: PlatformRequest[];
  posts: () => PlatformRequest[];
  addBot: (bot?: Partial<FakeDiscordBot>) => FakeDiscordBot;
  /** Gateway frames the clients sent, by opcode name. */
  received: { op: number; d: unknown; session?: string | undefined }[];
  /** Live gateway connections that completed IDENTIFY or RESUME, for a bot. */
  liveSessions: (token: string) => number;
  /** Sends a MESSAGE_CREATE dispatch on the bot's live session(s); queued for replay if none is live. */
  message: (token: string, d: Record<string, unknown>) => number;
  /** Closes the bot's live connections with `code` (4000: unknown error, which a client resumes). */
  drop: (token: string, code?: number) => void;
  inject: (answer: Injected) => void;
  close: () => Promise<void>;
}

export async function startFakeDiscord(options: { heartbeatIntervalMs?: number } = {}): Promise<FakeDiscord> {
  const bots = new Map<string, FakeDiscordBot>();
  const sessions = new Map<string, Session>();
  const received: FakeDiscord["received"] = [];
  let gatewayUrl = "";

  const route = (request: PlatformRequest, res: ServerResponse) => {
    const path = request.path.replace(/^\/api\/v10/, "");
    if (path === request.path) return sendJson(res, 404, { message: "404: Not Found", code: 0 });
    const auth = String(request.headers.authorization ?? "");
    const bot = auth.startsWith("Bot ") ? bots.get(auth.slice(4)) : undefined;
    if (!bot) return sendJson(res, 401, { message: "401: Unauthorized", code: 0 });
    let match: RegExpExecArray | null;
    if (request.method === "GET" && path === "/users/@me") return sendJson(res, 200, { id: bot.id, username: bot.username, discriminator: "0", global_name: null, avatar: null, bot: true, flags: 0 });
    if (request.method === "GET" && path === "/gateway/bot") {
      return sendJson(res, 200, { url: gatewayUrl, shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 } });
    }
    if (request.method === "GET" && (match = /^\/guilds\/(\d+)$/.exec(path))) {
      if (!bot.guilds.includes(match[1]!)) return sendJson(res, 403, { message: "Missing Access", code: 50001 });
      return sendJson(res, 200, { id: match[1], name: "Test guild", owner_id: "1", roles: [], emojis: [], features: [] });
    }
    if (request.method === "POST" && (match = /^\/channels\/(\d+)\/messages$/.exec(path))) {
      if (match[1]!.startsWith("404")) return sendJson(res, 404, { message: "Unknown Channel", code: 10003 });
      const id = nextId();
      return sendJson(res, 200, { id, channel_id: match[1], content: request.body.content, author: { id: bot.id, username: bot.username, bot: true }, timestamp: new Date().toISOString(), type: 0 });
    }
    return sendJson(res, 404, { message: "404: Not Found", code: 0 });
  };
  const http = await startHttp(route);
  gatewayUrl = `${http.url.replace("http://", "ws://")}/gateway`;

  const wss = new WebSocketServer({ server: http.server, path: "/gateway" });
  const heartbeatInterval = options.heartbeatIntervalMs ?? 41_250;
  const send = (socket: WebSocket, frame: object) => socket.readyState === socket.OPEN && socket.send(JSON.stringify(frame));
  const dispatch = (session: Session, t: string, d: unknown) => {
    session.seq += 1;
    session.sent.push({ s: session.seq, t, d });
    if (session.socket) send(session.socket, { op: 0, t, s: session.seq, d });
  };
  wss.on("connection", (socket) => {
    let session: Session | undefined;
    send(socket, { op: 10, d: { heartbeat_interval: heartbeatInterval }, s: null, t: null });
    socket.on("message", (raw) => {
      const frame = JSON.parse(String(raw)) as { op: number; d: Record<string, unknown> | number | null };
      received.push({ op: frame.op, d: frame.d, session: session?.id });
      const d = (frame.d ?? {}) as Record<string, unknown>;
      if (frame.op === 1) return send(socket, { op: 11, d: null, s: null, t: null });
      if (frame.op === 2) {
        const bot = bots.get(String(d.token));
        if (!bot) return socket.close(4004, "Authentication failed.");
        session = { id: nextId(0n), bot, seq: 0, sent: [], socket };
        sessions.set(session.id, session);
        dispatch(session, "READY", { v: 10, user: { id: bot.id, username: bot.username, bot: true }, guilds: bot.guilds.map((id) => ({ id, unavailable: true })), session_id: session.id, resume_gateway_url: gatewayUrl, shard: [0, 1], application: { id: bot.id, flags: 0 } });
        return;
      }
      if (frame.op === 6) {
        const found = sessions.get(String(d.session_id));
        if (!found || found.bot.token !== d.token) return send(socket, { op: 9, d: false, s: null, t: null });
        session = found;
        session.socket = socket;
        for (const missed of session.sent.filter((event) => event.s > Number(d.seq))) send(socket, { op: 0, t: missed.t, s: missed.s, d: missed.d });
        dispatch(session, "RESUMED", null);
      }
    });
    socket.on("close", () => {
      if (session && session.socket === socket) session.socket = undefined;
    });
  });

  let botNumber = 0;
  const sessionsOf = (token: string) => [...sessions.values()].filter((s) => s.bot.token === token);
  return {
    url: http.url,
    apiUrl: `${http.url}/api`,
    requests: http.requests,
    posts: () => http.requests.filter((r) => r.method === "POST" && /\/channels\/\d+\/messages$/.test(r.path)),
    addBot: (given = {}) => {
      botNumber += 1;
      const id = given.id ?? nextId(1184213597310459000n);
      const bot = { id, username: given.username ?? `persona-bot-${botNumber}`, guilds: given.guilds ?? ["884213597310459904"], token: given.token ?? `MTE4NDIx.${id}.fake-token-${botNumber}` };
      bots.set(bot.token, bot);
      return bot;
    },
    received,
    liveSessions: (token) => sessionsOf(token).filter((s) => s.socket && s.socket.readyState === s.socket.OPEN).length,
    message: (token, d) => {
      const live = sessionsOf(token).filter((s) => s.socket);
      const targets = live.length ? live : sessionsOf(token).slice(-1);
      for (const session of targets) dispatch(session, "MESSAGE_CREATE", d);
      return live.length;
    },
    drop: (token, code = 4000) => {
      for (const session of sessionsOf(token)) session.socket?.close(code, "dropped by the fake");
    },
    inject: http.inject,
    close: async () => {
      for (const client of wss.clients) client.terminate();
      wss.close();
      await http.close();
    },
  };
}

/** A MESSAGE_CREATE payload as the gateway sends it. */
export function discordMessage(options: { channelId: string; content: string; guildId?: string | null; authorId?: string; bot?: boolean; mentions?: string[]; username?: string }): Record<string, unknown> {
  const id = nextId();
  return {
    id,
    type: 0,
    channel_id: options.channelId,
    ...(options.guildId === null ? {} : { guild_id: options.guildId ?? "884213597310459904" }),
    author: { id: options.authorId ?? "555000111222333444", username: options.username ?? "ada", global_name: "Ada", bot: options.bot ?? false },
    content: options.content,
    mentions: (options.mentions ?? []).map((mentioned) => ({ id: mentioned, username: "bot" })),
    timestamp: new Date().toISOString(),
  };
}
