import { ApiError } from "../http/errors.ts";
import { hasMoreBody, pageWindow } from "../http/paging.ts";
import { HANDLED, type Handler, type HandlerMap } from "../http/router.ts";
import { abortOnClose } from "../http/sse.ts";
import { activateBranch, listBranches, selectMessage } from "./branches.ts";
import { streamTreeReplyEvents } from "./tree-stream.ts";
import { beginEdit, beginRegeneration, runWhole, type TreeReply } from "./tree-replies.ts";
import { toBranch, toConversationDetail, toExchange, toMessage } from "./views.ts";

const conversation_tree_regenerate: Handler<"conversation_tree_regenerate"> = async ({ services, principal, params }) => {
  const started = await beginRegeneration(services, principal.userId, params.id, params.message_id, { mode: "whole" });
  return { status: 201, body: toMessage((await runWhole(services, started)).reply) };
};

const conversation_tree_edit: Handler<"conversation_tree_edit"> = async ({ services, principal, params, body }) => {
  const started = await beginEdit(services, principal.userId, params.id, params.message_id, body.content, { mode: "whole" });
  return { status: 201, body: toExchange(await runWhole(services, started)) };
};

/** Streams a tree reply with the streamed send's events; its lease ends with the stream. */
async function streamTreeReply(
  context: Pick<Parameters<Handler<"conversation_tree_regenerate_stream">>[0], "services" | "params" | "res" | "log">,
  begin: (signal: AbortSignal) => Promise<TreeReply>,
): Promise<typeof HANDLED> {
  const { services, params, res, log } = context;
  const signal = abortOnClose(res, new ApiError(500, "internal_error", "The client disconnected before the reply was complete"));
  const started = await begin(signal);
  try {
    await streamTreeReplyEvents(res, started.reply, {
      keepAliveMs: services.config.streamKeepAliveMs,
      signal,
      log: log.child({ conversationId: params.id }),
    });
  } finally {
    await started.finish();
  }
  return HANDLED;
}

const conversation_tree_regenerate_stream: Handler<"conversation_tree_regenerate_stream"> = async (context) =>
  streamTreeReply(context, (signal) =>
    beginRegeneration(context.services, context.principal.userId, context.params.id, context.params.message_id, { mode: "stream", signal }),
  );

const conversation_tree_edit_stream: Handler<"conversation_tree_edit_stream"> = async (context) =>
  streamTreeReply(context, (signal) =>
    beginEdit(context.services, context.principal.userId, context.params.id, context.params.message_id, context.body.content, { mode: "stream", signal }),
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
