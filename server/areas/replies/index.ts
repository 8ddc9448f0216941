// The reply engine's public surface: one reply to a turn, whatever asked for it (a conversation,
// a room, the studio's test chat, the OpenAI-compatible door). It answers no operation itself.
import { defineArea } from "../../toolkit/area.ts";

export { beginReply, unreservedMessage } from "./engine.ts";
export { personaKnowledge } from "./knowledge.ts";
export { fillMacros, type MacroNames } from "./macros.ts";
export { inputTooLong, maxInputTokens, requireInputFits } from "./input-limit.ts";
export type { Citation, ContextSource, InputRecord, PastTurn, Reply, ReplyConnection, ReplyRecord, ReplySink } from "./types.ts";

export const area = defineArea({ name: "replies", handlers: {} });
