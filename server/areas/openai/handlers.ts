import { v7 as uuidv7 } from "uuid";
import { internalError } from "../../toolkit/http/error-catalogue.ts";
import { HANDLED, type Handler, type HandlerMap } from "../../toolkit/http/router.ts";
import { abortOnClose } from "../../toolkit/http/sse.ts";
import { takeStreamPlace } from "../../toolkit/http/stream-limits.ts";
import { openai_responses_create } from "./responses.ts";
import { beginCompletion, listModels, requireModel } from "./service.ts";
import { modelNameOf } from "../personas/index.ts";
import { streamCompletion } from "./stream.ts";
import { modelRegistry } from "../../toolkit/models/index.ts";
import { completionHead, toCompletion, toModel } from "./views.ts";
import { withheldReply } from "./withheld.ts";

const openai_list_models: Handler<"openai_list_models"> = async ({ services, principal }) => {
  const registry = modelRegistry(services.config.llm);
  // The list is the caller's own personas: each is named by its handle.
  const data = (await listModels(services, principal.userId)).map((row) => toModel(row, row.handle, registry.budget(row.model).contextTokens));
  return { status: 200, body: { object: "list", data } };
};

const openai_get_model: Handler<"openai_get_model"> = async ({ services, principal, params }) => {
  const persona = await requireModel(services, principal.userId, params.model);
  const contextLength = modelRegistry(services.config.llm).budget(persona.model).contextTokens;
  return { status: 200, body: toModel(persona, await modelNameOf(services, principal.userId, persona), contextLength) };
};

/**
 * Blocking: one `chat.completion` once the reply is complete (and stored, with a conversation).
 * Streamed: errors found before the stream starts are JSON; then the reply goes out as chunks.
 */
const openai_create_chat_completion: Handler<"openai_create_chat_completion"> = async ({ services, principal, body, req, res, log }) => {
  const conversationId = body.conversation_id ?? req.get("x-persona-conversation-id") ?? undefined;
  const request = { ...body, conversationId };
  const head = completionHead(uuidv7(), body.model, services.now());
  if (body.stream) {
    takeStreamPlace(services, res, principal.userId);
    const signal = abortOnClose(res, internalError("The client disconnected before the reply was complete"));
    const { reply } = await beginCompletion(services, principal.userId, request, { mode: "stream", signal });
    await streamCompletion(res, reply, head, {
      keepAliveMs: services.config.streamKeepAliveMs,
      signal,
      includeUsage: body.stream_options?.include_usage === true,
      log,
    });
    return HANDLED;
  }
  const { reply, conversationId: stored } = await beginCompletion(services, principal.userId, request, { mode: "whole" });
  for await (const event of reply) {
    if (event.type === "error") {
      const withheld = withheldReply(event.error);
      if (withheld) return { status: 200, body: toCompletion(head, withheld, null) };
      throw event.error;
    }
    if (event.type === "done") {
      return { status: 200, body: toCompletion(head, event.reply, stored ? event.reply.id : null) };
    }
  }
  throw new Error("The reply ended without done or error");
};

export const handlers = {
  openai_list_models,
  openai_get_model,
  openai_create_chat_completion,
  openai_responses_create,
} satisfies Partial<HandlerMap>;
