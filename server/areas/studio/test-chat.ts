import { v7 as uuidv7 } from "uuid";
import type { PersonaRow } from "../personas/index.ts";
import { activeVersionOf, requireVersion } from "../personas/index.ts";
import { beginReply, requireInputFits } from "../replies/index.ts";
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
}

/** Test chat stores nothing: no conversation, no message, no event. */
const nowhere: ReplySink = {
  store: async () => {},
  failed: async () => {},
};

/**
 * One reply to `message` with a version's instructions (the active one by default), through the
 * reply engine with the persona's knowledge and model, as a real chat would get; no history but
 * the persona's greeting, as in a new conversation. It
 * takes one message of the caller's monthly quota (the engine's reservation) and counts toward no
 * statistic of the persona, because nothing is stored.
 */
export async function testChat(services: Services, userId: string, persona: PersonaRow, input: { message: string; version_id?: string }): Promise<TestChatResultRow> {
  requireInputFits(services.config.llm, input.message, "/body/message");
  const version = input.version_id !== undefined ? await requireVersion(services, persona.id, input.version_id) : await activeVersionOf(services, persona.id);
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
    persona: { ...persona, instructions: version?.instructions ?? persona.instructions },
    context,
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
      };
    }
  }
  throw new Error("The reply ended without done or error");
}
