import type { Task, TaskList } from "graphile-worker";
import { sendMessage } from "../conversations/index.ts";
import { createConversation } from "../conversations/index.ts";
import { findAccountById } from "../auth/index.ts";
import { ApiError } from "../../toolkit/http/errors.ts";
import type { Services } from "../../toolkit/services.ts";
import { platformClient } from "./platforms/index.ts";
import { MESSAGE_LIMIT, PlatformRefusal } from "./platforms/types.ts";
import { tokenOf } from "./service.ts";
import { channelConversation, countAnswered, findIntegration, mapChannel, purgeEventsBefore, recordIssue, type IntegrationRow } from "./store.ts";
import { splitMessage } from "./split.ts";

export const REPLY_TASK = "integration_reply";
export const POST_TASK = "integration_post";
const PURGE_TASK = "integration_events_purge";

/** Platform event ids are kept 3 days: every platform gives up retrying long before. */
const EVENT_ID_DAYS = 3;
/** A message content is at most 32,000 characters (DECISIONS: Conversations and chat). */
const MAX_CONTENT = 32_000;

export interface ReplyPayload {
  integration_id: string;
  channel_id: string;
  reply_to: string | null;
  text: string;
  author: string;
  direct: boolean;
}

export interface PostPayload {
  integration_id: string;
  channel_id: string;
  reply_to: string | null;
  text: string;
}

const TITLES = { forum: "Forum channel", messenger: "Messenger chat", workspace: "Workspace channel" } as const;

/**
 * The conversation a platform channel maps to, made on its first message. The channel's jobs run
 * one at a time (one job queue per channel), so two first messages cannot make two conversations.
 */
async function conversationOf(services: Services, row: IntegrationRow, payload: ReplyPayload, fresh = false): Promise<string> {
  const { knex } = services.db;
  const existing = fresh ? undefined : await channelConversation(knex, row.id, payload.channel_id);
  if (existing) return existing;
  const title = payload.direct ? `${TITLES[row.platform].split(" ")[0]} direct messages with ${payload.author}` : `${TITLES[row.platform]} ${payload.channel_id}`;
  const conversation = await createConversation(services, row.user_id, { persona_id: row.persona_id, title: title.slice(0, 200) });
  await mapChannel(knex, row.id, payload.channel_id, conversation.id, services.now());
  return conversation.id;
}

async function note(services: Services, row: IntegrationRow, code: string, message: string): Promise<void> {
  await recordIssue(services.db.knex, row.id, { code, message, at: services.now().toISOString() });
}

/**
 * Answers one platform message through the reply engine, as a message of the channel's
 * conversation counted against the persona owner's quota, then posts the answer. Over quota:
 * nothing is posted and the reason is recorded. A model failure is recorded and retried by the job.
 */
async function reply(services: Services, payload: ReplyPayload): Promise<void> {
  const { knex } = services.db;
  const row = await findIntegration(knex, payload.integration_id);
  if (!row || row.status !== "active") return;
  // A suspended owner's bots answer no one until the suspension is lifted (issue 41, docs/adr/0376):
  // the account's credentials are refused everywhere, and a bot speaks for it on its quota.
  const owner = await findAccountById(services, row.user_id);
  if (owner?.suspended_at) {
    await note(services, row, "account_suspended", "The bot's owner is suspended: its messages go unanswered until the suspension is lifted");
    services.log.info({ integration: row.id }, "platform message not answered: the owner's account is suspended");
    return;
  }
  // In a channel several people speak: the persona is told who.
  const content = (payload.direct ? payload.text : `${payload.author}: ${payload.text}`).slice(0, MAX_CONTENT);
  let answer: string;
  try {
    let conversationId = await conversationOf(services, row, payload);
    try {
      answer = (await sendMessage(services, row.user_id, conversationId, content)).reply.content;
    } catch (error) {
      // The owner deleted the channel's conversation meanwhile: the channel starts a new one.
      if (!(error instanceof ApiError && error.status === 404)) throw error;
      conversationId = await conversationOf(services, row, payload, true);
      answer = (await sendMessage(services, row.user_id, conversationId, content)).reply.content;
    }
  } catch (error) {
    if (error instanceof ApiError && error.status === 402) {
      await note(services, row, "plan_limit_exceeded", error.message);
      services.log.info({ integration: row.id }, "platform message not answered: the owner's message quota is used up");
      return;
    }
    // A message too long for the model's context (issue 34 item 6) is refused again on every retry.
    if (error instanceof ApiError && error.status === 400) {
      await note(services, row, error.code, error.message);
      services.log.info({ integration: row.id }, "platform message not answered: it was refused");
      return;
    }
    if (error instanceof ApiError) await note(services, row, error.code, error.message);
    throw error;
  }
  await post(services, { integration_id: row.id, channel_id: payload.channel_id, reply_to: payload.reply_to, text: answer }, row);
}

/**
 * Posts a reply on the platform, in parts when it is longer than the platform takes. The
 * libraries wait out 429s; a platform that is down fails the job, which graphile-worker retries
 * with backoff (the reply is stored already and is not generated again). A refusal is recorded.
 */
async function post(services: Services, payload: PostPayload, known?: IntegrationRow): Promise<void> {
  const row = known ?? (await findIntegration(services.db.knex, payload.integration_id));
  if (!row) return;
  const client = await platformClient(services.config.integrations, row.platform, await tokenOf(services, row));
  const parts = splitMessage(payload.text, MESSAGE_LIMIT[row.platform]);
  try {
    for (const [index, part] of parts.entries()) await client.send(payload.channel_id, part, index === 0 ? payload.reply_to ?? undefined : undefined);
  } catch (error) {
    const message = error instanceof Error ? error.message : "The platform failed";
    await note(services, row, "platform_error", message);
    if (error instanceof PlatformRefusal) {
      services.log.warn({ integration: row.id, reason: message }, "the platform refused a reply");
      return;
    }
    if (!known) throw error;
    // First try, inside the reply job: a retry of that job would generate the reply again.
    await services.jobs.add(POST_TASK, { ...payload }, { maxAttempts: 8 });
    services.log.warn({ integration: row.id, reason: message }, "posting a reply failed; retrying in a job");
    return;
  }
  await countAnswered(services.db.knex, row.id, services.now());
}

export function integrationTasks(services: Services): TaskList {
  const replyTask: Task = async (payload) => reply(services, payload as ReplyPayload);
  const postTask: Task = async (payload) => post(services, payload as PostPayload);
  const purge: Task = async () => {
    const removed = await purgeEventsBefore(services.db.knex, new Date(services.now().getTime() - EVENT_ID_DAYS * 86_400_000));
    if (removed) services.log.info({ removed }, "old platform event ids purged");
  };
  return { [REPLY_TASK]: replyTask, [POST_TASK]: postTask, [PURGE_TASK]: purge };
}

export const integrationCrontab = [`41 * * * * ${PURGE_TASK}`];
