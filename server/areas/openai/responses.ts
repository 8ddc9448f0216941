import { v7 as uuidv7 } from "uuid";
import { internalError, reworded } from "../../toolkit/http/error-catalogue.ts";
import { ApiError } from "../../toolkit/http/errors.ts";
import { HANDLED, type Handler } from "../../toolkit/http/router.ts";
import { abortOnClose } from "../../toolkit/http/sse.ts";
import { takeStreamPlace } from "../../toolkit/http/stream-limits.ts";
import type { Services } from "../../toolkit/services.ts";
import { toChatRequest, type Translation } from "./responses-request.ts";
import { streamResponse } from "./responses-stream.ts";
import { completedResponse, responseHead } from "./responses-views.ts";
import { withheldReply } from "./withheld.ts";
import { beginCompletion, type Completion } from "./service.ts";

// POST /openai/v1/responses: OpenAI's Responses API as a translation over the chat completion
// (docs/adr/0308-the-responses-api-is-a-translation-over-chat-completions-stateless.md).

/**
 * Blocking: one response object once the reply is complete. Streamed: errors found before the
 * stream starts are JSON; then the reply goes out as the Responses API's events.
 */
export const openai_responses_create: Handler<"openai_responses_create"> = async ({ services, principal, body, res, log }) => {
  const translation = toChatRequest(body);
  const translateError = (error: ApiError) => inResponsesTerms(error, translation);
  const head = responseHead({ response: uuidv7(), message: uuidv7() }, body, services.now());
  if (body.stream) {
    takeStreamPlace(services, res, principal.userId);
    const signal = abortOnClose(res, internalError("The client disconnected before the reply was complete"));
    const { reply } = await begin(services, principal.userId, translation, { mode: "stream", signal });
    await streamResponse(res, reply, head, { keepAliveMs: services.config.streamKeepAliveMs, signal, log, now: services.now, translateError });
    return HANDLED;
  }
  const { reply } = await begin(services, principal.userId, translation, { mode: "whole" });
  for await (const event of reply) {
    if (event.type === "error") {
      const withheld = withheldReply(event.error);
      if (withheld) return { status: 200, body: completedResponse(head, withheld, services.now()) };
      throw translateError(event.error);
    }
    if (event.type === "done") return { status: 200, body: completedResponse(head, event.reply, services.now()) };
  }
  throw new Error("The reply ended without done or error");
};

/** The chat completion's beginning, its refusals named in the Responses request's terms. */
async function begin(services: Services, userId: string, translation: Translation, options: Parameters<typeof beginCompletion>[3]): Promise<Completion> {
  try {
    return await beginCompletion(services, userId, translation.request, options);
  } catch (error) {
    throw error instanceof ApiError ? inResponsesTerms(error, translation) : error;
  }
}

/** An error of the chat completion whose `param` (and the field names in its message) are the Responses request's. */
function inResponsesTerms(error: ApiError, translation: Translation): ApiError {
  const details = error.details as { openai_code?: string; param?: string | null } | undefined;
  if (typeof details?.param !== "string") return error;
  const param = translation.paramOf(details.param, details.openai_code);
  if (param === details.param) return error;
  const message = error.message.replace(/\bmessages\[\d+\][\w.[\]]*/g, (name) => translation.paramOf(name));
  return reworded(error, message, { ...error.details, param });
}
