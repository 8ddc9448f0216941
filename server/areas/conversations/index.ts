// The conversations area's public surface: conversations, their message tree, blocking and
// streamed sends, and resumable generations.
import { defineArea } from "../../toolkit/area.ts";
import { conversationAccountData } from "./account-data.ts";
import { summaryTask } from "./chat/memory-job.ts";
import { titleTask } from "./chat/title-job.ts";
import { generationAccountData } from "./generations/account-data.ts";
import { deltasPurgeTask, DELTAS_PURGE_TASK, generationCrontab } from "./generations/registry.ts";
import { handlers } from "./handlers.ts";
import { handlers as tree } from "./tree/handlers.ts";

export { conversationReply } from "./chat/replying.ts";
export { sendMessage } from "./chat/turn.ts";
export { settleGenerations } from "./generations/registry.ts";
export { conversationCount, createConversation, requireOwnConversation } from "./service.ts";
// The embeds area's guest chat runs a visitor's turn as a conversation of the persona's owner.
export { streamedSend } from "./chat/streamed-send.ts";
export { findStoredReply } from "./chat/turn.ts";
export { followGeneration } from "./generations/follow.ts";
export { stopGeneration } from "./generations/service.ts";
export { deleteConversation, listMessages } from "./service.ts";
// What a user may report (the safety area, issue 41).
export { findOwnMessage } from "./service.ts";
// What stored replies cost (issue 40): the usage endpoint's sums and the operator's report.
export { costReport, replyCostsOf, type CostLine, type ReplyCosts } from "./costs.ts";

export const area = defineArea({
  name: "conversations",
  handlers: { ...handlers, ...tree },
  tasks: (services) => ({ conversation_title: titleTask(services), conversation_summary: summaryTask(services), [DELTAS_PURGE_TASK]: deltasPurgeTask(services) }),
  crontab: generationCrontab,
  accountData: [...conversationAccountData, ...generationAccountData],
  tables: ["conversations", "messages", "conversation_summaries", "generations", "generation_events"], repliesStoredIn: ["messages"],
});
export { Generations } from "./generations/registry.ts";
