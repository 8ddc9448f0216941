import { hasMoreBody, pageWindow } from "../../../toolkit/http/paging.ts";
import { HANDLED, type Handler, type HandlerMap } from "../../../toolkit/http/router.ts";
import { takeStreamPlace } from "../../../toolkit/http/stream-limits.ts";
import { activateBranch, listBranches, selectMessage } from "./branches.ts";
import { followGeneration } from "../generations/follow.ts";
import { startGeneration } from "../generations/registry.ts";
import { beginEdit, beginRegeneration, runWhole, type TreeReply } from "./replies.ts";
import { toBranch, toConversationDetail, toExchange, toMessage } from "../views.ts";

const conversation_tree_regenerate: Handler<"conversation_tree_regenerate"> = async ({ services, principal, params }) => {
  const started = await beginRegeneration(services, principal.userId, params.id, params.message_id, { mode: "whole" });
  return { status: 201, body: toMessage((await runWhole(services, started)).reply) };
};

const conversation_tree_edit: Handler<"conversation_tree_edit"> = async ({ services, principal, params, body }) => {
  const started = await beginEdit(services, principal.userId, params.id, params.message_id, body.content, { mode: "whole" });
  return { status: 201, body: toExchange(await runWhole(services, started)) };
};

/**
 * Streams a tree reply as the streamed send does: it runs as a generation (first event `start`),
 * resumable and stoppable with the generation operations, and a client that leaves stops following,
 * not the reply. The conversation's reply lease ends with the generation.
 */
async function streamTreeReply(
  context: Pick<Parameters<Handler<"conversation_tree_regenerate_stream">>[0], "services" | "principal" | "params" | "res" | "log">,
  begin: (stop: AbortSignal) => Promise<TreeReply>,
): Promise<typeof HANDLED> {
  const { services, principal, params, res, log } = context;
  takeStreamPlace(services, res, principal.userId);
  const stop = new AbortController();
  const started = await begin(stop.signal);
  const live = await startGeneration(services, {
    reply: started.reply,
    conversationId: params.id,
    userId: principal.userId,
    stop,
    key: undefined,
    log: log.child({ conversationId: params.id }),
    onEnd: started.finish,
  }).catch(async (error: unknown) => {
    await started.reply.cancel();
    await started.finish();
    throw error;
  });
  await followGeneration(services, res, { id: live.id, conversation_id: params.id }, 0, live);
  return HANDLED;
}

const conversation_tree_regenerate_stream: Handler<"conversation_tree_regenerate_stream"> = async (context) =>
  streamTreeReply(context, (signal) =>
    beginRegeneration(context.services, context.principal.userId, context.params.id, context.params.message_id, { mode: "stream", stop: signal }),
  );

const conversation_tree_edit_stream: Handler<"conversation_tree_edit_stream"> = async (context) =>
  streamTreeReply(context, (signal) =>
    beginEdit(context.services, context.principal.userId, context.params.id, context.params.message_id, context.body.content, { mode: "stream", stop: signal }),
  );

const conversation_tree_select: Handler<"conversation_tree_select"> = async ({ services, principal, params }) => {
  const { conversation, messages } = await selectMessage(services, principal.userId, params.id, params.message_id);
  return { status: 200, body: toConversationDetail(conversation, messages) };
};

const conversation_tree_list_branches: Handler<"conversation_tree_list_branches"> = async ({ services, principal, params, query }) => {
  const window = pageWindow(query);
  const page = await listBranches(services, principal.userId, params.id, window);
  return { status: 200, body: hasMoreBody(page, window, toBranch) };
};

const conversation_tree_activate_branch: Handler<"conversation_tree_activate_branch"> = async ({ services, principal, params }) => ({
  status: 200,
  body: toBranch(await activateBranch(services, principal.userId, params.id, params.leaf_id)),
});

export const handlers = {
  conversation_tree_regenerate,
  conversation_tree_regenerate_stream,
  conversation_tree_select,
  conversation_tree_edit,
  conversation_tree_edit_stream,
  conversation_tree_list_branches,
  conversation_tree_activate_branch,
} satisfies Partial<HandlerMap>;
