import { WebSocketManager, WebSocketShardEvents, type SessionInfo } from "@discordjs/ws";
import { GatewayDispatchEvents, GatewayIntentBits } from "discord-api-types/v10";
import type { Logger } from "../../../toolkit/logger.ts";
import { discordRest } from "../platforms/discord.ts";
import type { PlatformSettings } from "../platforms/types.ts";

/** Guild and direct messages with their text (MESSAGE_CONTENT is a privileged intent the bot's app must enable). */
const INTENTS = GatewayIntentBits.Guilds | GatewayIntentBits.GuildMessages | GatewayIntentBits.DirectMessages | GatewayIntentBits.MessageContent;
/** Close codes after which the platform will not take the bot back as it is (token, intents, version). */
const FATAL_CLOSE_CODES = new Set([4004, 4010, 4011, 4012, 4013, 4014]);
/** How long READY may take before the attempt is given up (the supervisor tries again later). */
const CONNECT_TIMEOUT_MS = 30_000;

export interface GatewaySession {
  close: () => Promise<void>;
}

/**
 * One bot's gateway connection through @discordjs/ws: it asks REST for `/gateway/bot` (so the
 * platform's base URL also decides the gateway's), identifies, heartbeats, and resumes after a drop
 * with the session id and sequence kept here (one session per bot, not the library's process-wide
 * store). Each MESSAGE_CREATE goes to `onMessage`.
 */
export async function openDiscordSession(
  settings: PlatformSettings,
  token: string,
  log: Logger,
  onMessage: (data: Record<string, unknown>) => void,
  onFatal: (reason: string) => void,
): Promise<GatewaySession> {
  let session: SessionInfo | null = null;
  const manager = new WebSocketManager({
    token,
    intents: INTENTS,
    rest: discordRest(settings, token),
    shardCount: 1,
    retrieveSessionInfo: () => session,
    updateSessionInfo: (_shardId, info) => {
      session = info;
    },
  });
  manager.on(WebSocketShardEvents.Dispatch, (payload) => {
    if (payload.t === GatewayDispatchEvents.MessageCreate) onMessage(payload.d as unknown as Record<string, unknown>);
  });
  manager.on(WebSocketShardEvents.Resumed, () => log.info("forum gateway session resumed"));
  manager.on(WebSocketShardEvents.Error, (error) => log.warn({ reason: error.message }, "forum gateway error"));
  // The library does not reconnect after these: the supervisor closes the session and retries later.
  manager.on(WebSocketShardEvents.Closed, (code) => {
    if (FATAL_CLOSE_CODES.has(code)) onFatal(`the forum gateway closed the connection with code ${code}`);
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      manager.connect(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("the gateway did not become ready in time")), CONNECT_TIMEOUT_MS);
      }),
    ]);
  } catch (error) {
    await Promise.resolve(manager.destroy()).catch(() => undefined);
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return {
    close: async () => {
      await manager.destroy();
    },
  };
}
