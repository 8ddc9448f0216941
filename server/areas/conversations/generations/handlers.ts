import { invalidRequest } from "../../../toolkit/http/error-catalogue.ts";
import { HANDLED, type Handler, type HandlerMap } from "../../../toolkit/http/router.ts";
import { takeStreamPlace } from "../../../toolkit/http/stream-limits.ts";
import { followGeneration } from "./follow.ts";
import { requireOwnGeneration, stopGeneration } from "./service.ts";
import { toGeneration } from "./views.ts";

const conversation_generations_get: Handler<"conversation_generations_get"> = async ({ services, principal, params }) => ({
  status: 200,
  body: toGeneration(await requireOwnGeneration(services, principal.userId, params.id, params.generation_id)),
});

/** Replays what the client missed (after `Last-Event-ID`), then follows the generation live. */
const conversation_generations_stream: Handler<"conversation_generations_stream"> = async ({ services, principal, params, req, res }) => {
  takeStreamPlace(services, res, principal.userId);
  const header = req.get("last-event-id");
  const afterSeq = header === undefined || header === "" ? 0 : Number(header);
  if (!Number.isSafeInteger(afterSeq) || afterSeq < 0) throw invalidRequest("Last-Event-ID must be the id of an event of this stream");
  const generation = await requireOwnGeneration(services, principal.userId, params.id, params.generation_id);
  await followGeneration(services, res, generation, afterSeq);
  return HANDLED;
};

const conversation_generations_stop: Handler<"conversation_generations_stop"> = async ({ services, principal, params }) => ({
  status: 200,
  body: toGeneration(await stopGeneration(services, principal.userId, params.id, params.generation_id)),
});

export const generationHandlers = {
  conversation_generations_get,
  conversation_generations_stream,
  conversation_generations_stop,
} satisfies Partial<HandlerMap>;
