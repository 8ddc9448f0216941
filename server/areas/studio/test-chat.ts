import { v7 as uuidv7 } from "uuid";
import type { ModelSettings, PersonaRow } from "../personas/index.ts";
import { activeVersionOf, requireVersion, settingsOver } from "../personas/index.ts";
import { replyConnectionFor } from "../models/index.ts";
import { usdOf } from "../../toolkit/models/index.ts";
import { beginReply, requireInputFits, unreservedMessage } from "../replies/index.ts";
import { personaKnowledge } from "../replies/index.ts";
import type { ContextSource, ReplySink } from "../replies/index.ts";
import type { Services } from "../../toolkit/services.ts";

export interface TestChatResultRow {
  id: string;
  persona_id: string;
  version_id: string | null;
  input: string;
  output: string;
  model: string;
  latency_ms: number;
  tokens: { input: number; output: number };
  created_at: Date;
  model_id: string;
  fallback_from: string | null;
  model_settings: ModelSettings;
  cost_usd: number;
}

/** Test chat stores nothing: no conversation, no message, no event. */
const nowhere: ReplySink = {
  store: async () => {},
  failed: async () => {},
};

/**
 * One reply to `message` with a version's instructions (the active one by default), through the
 * reply engine with the persona's knowledge and model, as a real chat would get; no history but
 * the persona's greeting, as in a new conversation. Its generation settings are the persona's with
 * the version's over them and the request's over those (issue 40), and it runs on the owner's own
 * provider connection when their chats with the persona do. It takes one message of the caller's
 * monthly quota (the engine's reservation) and counts toward no statistic of the persona, because
 * nothing is stored.
 */
export async function testChat(
  services: Services,
  userId: string,
  persona: PersonaRow,
  input: { message: string; version_id?: string; model_settings?: ModelSettings },
): Promise<TestChatResultRow> {
  requireInputFits(services.config.llm, input.message, "/body/message");
  const [version, connection] = await Promise.all([
    input.version_id !== undefined ? requireVersion(services, persona.id, input.version_id) : activeVersionOf(services, persona.id),
    replyConnectionFor(services, userId, persona.provider_connection_id ?? null),
  ]);
  const settings = settingsOver(settingsOver(persona.model_settings, version?.model_settings), input.model_settings);
  const context: ContextSource = {
    async load(text, signal) {
      // As the first message of a new conversation: after its greeting.
      const history = persona.greeting_message === null ? [] : [{ role: "assistant" as const, content: persona.greeting_message }];
      return { history, knowledge: await personaKnowledge(services, { userId, personaId: persona.id, input: text, signal }) };
    },
  };
  const started = performance.now();
  const createdAt = services.now();
  const reply = await beginReply(services, {
    userId,
    persona: { ...persona, instructions: version?.instructions ?? persona.instructions, model_settings: settings, connection },
    context,
    // A reply on the owner's own key counts against no quota unless the operator counts them.
    ...(connection && !services.config.connections.countAgainstQuota ? { reserved: unreservedMessage() } : {}),
    input: input.message,
    sink: nowhere,
    mode: "whole",
  });
  for await (const event of reply) {
    if (event.type === "error") throw event.error;
    if (event.type === "done") {
      return {
        id: uuidv7(),
        persona_id: persona.id,
        version_id: version?.id ?? null,
        input: input.message,
        output: event.reply.content,
        model: event.reply.model,
        latency_ms: Math.round(performance.now() - started),
        tokens: { input: event.reply.usage.inputTokens, output: event.reply.usage.outputTokens },
        created_at: createdAt,
        model_id: event.reply.modelId,
        fallback_from: event.reply.fallbackFrom ?? null,
        model_settings: settings,
        cost_usd: usdOf(event.reply.costNanos),
      };
    }
  }
  throw new Error("The reply ended without done or error");
}
