import type { PlatformName } from "./platforms/types.ts";

/** A platform message, in the terms the service decides and replies on. */
export interface InboundMessage {
  /** Keys that make a retry or a second delivery of the same message a duplicate. */
  eventIds: string[];
  /** Where to post the reply (channel or chat id). */
  channelId: string;
  /** The guild (forum) or workspace (workspace) the message came from; undefined in direct messages. */
  place?: string | undefined;
  /** The message to reply to (thread or quote), when the platform threads replies there. */
  replyTo: string | null;
  /** The text, with the bot's own mention taken out. */
  text: string;
  authorId: string;
  authorName: string;
  authorIsBot: boolean;
  /** A direct (private) message to the bot. */
  direct: boolean;
  /** The bot is mentioned or replied to. */
  mentioned: boolean;
}

/** The bot as the normalisers need it: its id, and its username for messenger mentions. */
export interface BotIdentity {
  id: string;
  username: string | null;
}

type Json = Record<string, unknown>;
const obj = (value: unknown): Json | undefined => (value && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined);
const str = (value: unknown): string | undefined => (typeof value === "string" ? value : typeof value === "number" ? String(value) : undefined);

/** A forum (Discord) gateway MESSAGE_CREATE; undefined for anything that is not a text message. */
export function fromDiscord(d: Json, bot: BotIdentity): InboundMessage | undefined {
  const author = obj(d.author);
  const id = str(d.id);
  const channelId = str(d.channel_id);
  const content = str(d.content);
  if (!author || !id || !channelId || content === undefined) return undefined;
  const guildId = str(d.guild_id);
  const mentions = Array.isArray(d.mentions) ? d.mentions.map((m) => str(obj(m)?.id)) : [];
  const repliedTo = str(obj(obj(d.referenced_message)?.author)?.id);
  const member = obj(d.member);
  return {
    eventIds: [`message:${id}`],
    channelId,
    place: guildId,
    replyTo: guildId ? id : null,
    text: content.replaceAll(new RegExp(`<@!?${bot.id}>`, "g"), "").trim(),
    authorId: str(author.id) ?? "",
    authorName: str(member?.nick) ?? str(author.global_name) ?? str(author.username) ?? "someone",
    authorIsBot: author.bot === true,
    direct: !guildId,
    mentioned: mentions.includes(bot.id) || repliedTo === bot.id,
  };
}

/** A messenger (Telegram) update; undefined for anything but a text message. */
export function fromTelegram(update: Json, bot: BotIdentity): InboundMessage | undefined {
  const message = obj(update.message);
  const chat = obj(message?.chat);
  const from = obj(message?.from);
  const text = str(message?.text);
  if (!message || !chat || !from || text === undefined) return undefined;
  const direct = chat.type === "private";
  const handle = bot.username ? `@${bot.username}` : undefined;
  const entities = Array.isArray(message.entities) ? message.entities.map(obj) : [];
  const mentionedByName = entities.some((e) => e?.type === "mention" && handle && text.substr(Number(e.offset), Number(e.length)).toLowerCase() === handle.toLowerCase());
  const mentionedById = entities.some((e) => e?.type === "text_mention" && str(obj(e.user)?.id) === bot.id);
  const repliedTo = str(obj(obj(message.reply_to_message)?.from)?.id) === bot.id;
  let clean = handle ? text.replaceAll(new RegExp(escapeRegExp(handle), "gi"), "").trim() : text.trim();
  // The messenger's clients send /start when a user opens the bot; the persona should greet back.
  if (/^\/start(@\S+)?$/i.test(clean)) clean = "Hello!";
  const name = [str(from.first_name), str(from.last_name)].filter(Boolean).join(" ") || str(from.username) || "someone";
  return {
    eventIds: [`update:${str(update.update_id)}`],
    channelId: str(chat.id) ?? "",
    replyTo: direct ? null : str(message.message_id) ?? null,
    text: clean,
    authorId: str(from.id) ?? "",
    authorName: name,
    authorIsBot: from.is_bot === true,
    direct,
    mentioned: mentionedByName || mentionedById || repliedTo,
  };
}

/** A workspace (Slack) Events API `event_callback`; undefined for anything but a person's new message. */
export function fromSlack(callback: Json, bot: BotIdentity): InboundMessage | undefined {
  const event = obj(callback.event);
  if (!event || (event.type !== "message" && event.type !== "app_mention")) return undefined;
  // Edits, deletions, joins and bot posts all come as subtypes.
  if (event.subtype !== undefined) return undefined;
  const channel = str(event.channel);
  const ts = str(event.ts);
  const text = str(event.text);
  if (!channel || !ts || text === undefined) return undefined;
  return {
    eventIds: [`event:${str(callback.event_id) ?? ts}`, `message:${channel}:${ts}`],
    channelId: channel,
    place: str(callback.team_id) ?? str(event.team),
    replyTo: str(event.thread_ts) ?? null,
    text: text.replaceAll(`<@${bot.id}>`, "").trim(),
    authorId: str(event.user) ?? "",
    authorName: str(event.user) ? `<@${str(event.user)}>` : "someone",
    authorIsBot: event.bot_id !== undefined,
    direct: event.channel_type === "im",
    mentioned: event.type === "app_mention" || text.includes(`<@${bot.id}>`),
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** What the bot's settings say about a message: answer it, or why not. */
export function shouldAnswer(
  settings: { platform: PlatformName; status: string; auto_respond: boolean; bot_user_id: string; guild_id: string | null; workspace_id: string | null; channel_ids: string[] | null },
  message: InboundMessage,
): boolean {
  if (settings.status !== "active") return false;
  // Never itself, never another bot: two bots answering each other would never stop.
  if (message.authorIsBot || message.authorId === settings.bot_user_id) return false;
  if (!message.text) return false;
  if (!message.direct) {
    const place = settings.platform === "forum" ? settings.guild_id : settings.platform === "workspace" ? settings.workspace_id : undefined;
    if (place !== undefined && message.place !== place) return false;
    if (settings.channel_ids && !settings.channel_ids.includes(message.channelId)) return false;
  }
  return message.direct || message.mentioned || settings.auto_respond;
}
