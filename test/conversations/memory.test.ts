import { v7 as uuidv7 } from "uuid";
import { describe, expect, it, vi } from "vitest";
import { SUMMARY_PREAMBLE, assembleContext } from "../../server/areas/replies/context.ts";
import type { ChatRequest } from "../../server/toolkit/providers/llm/types.ts";
import { archiveOf } from "../support/account-data.ts";
import { createConversation, createPersona, sendBlocking } from "../support/chat.ts";
import { eventually } from "../support/wait.ts";
import { useTestService } from "../support/fixtures.ts";

// Long-chat memory on the offline default: once the active path outgrows the context budget, a
// job writes a rolling summary of what fell out of the window, and context assembly puts it right
// after the instructions. The offline model's summary is extractive, so a fact survives verbatim.
const fx = useTestService();
const knex = () => fx.service.services.db.knex;

const FACT = "My sister Zephyrine lives in Reykjavik and keeps three grey cats.";

/**
 * The model's last reply request of those spied on that answers `text`: the service may be lent to
 * other files, so the request is picked by this test's own message.
 */
function replyTo(calls: unknown[][], text: string): ChatRequest {
  const reply = calls.map(([request]) => request as ChatRequest).filter((request) => request.purpose === "reply" && request.messages.at(-1)?.content === text).at(-1);
  expect(reply, `the model was asked to reply to "${text}"`).toBeDefined();
  return reply!;
}

/**
 * Writes a straight path of `count` messages after the conversation's greeting (its active leaf at
 * creation), the fact first, and makes its last one the active leaf.
 */
async function seedLongChat(conversationId: string, personaId: string, count: number) {
  const { active_message_id: greeting } = await knex()("conversations").where({ id: conversationId }).first();
  const start = Date.UTC(2026, 0, 1);
  const rows = Array.from({ length: count }, (_, i) => {
    const role = i % 2 === 0 ? "user" : "assistant";
    const content = i === 0 ? FACT
      : role === "user" ? `Note ${i}: the weather on the station was calm today and the crew ran their usual drills in the hangar.`
      : `Understood, log entry ${i} recorded; the drills in the hangar went as planned and the crew is resting now.`;
    return { id: uuidv7(), conversation_id: conversationId, user_id: fx.alice.id, persona_id: personaId, role, content, content_tokens: 0, created_at: new Date(start + i * 1000), depth: i + 1 };
  });
  const chained = rows.map((row, i) => ({ ...row, parent_id: i === 0 ? greeting : rows[i - 1]!.id, content_tokens: Math.ceil(row.content.length / 4) }));
  for (let i = 0; i < chained.length; i += 100) await knex()("messages").insert(chained.slice(i, i + 100));
  await knex()("conversations").where({ id: conversationId }).update({ active_message_id: rows.at(-1)!.id, message_count: count });
  return rows;
}

describe("long-chat memory", () => {
  it("carries a fact from message 1 of a 400-message conversation into the context as part of the summary", async () => {
    const persona = await createPersona(fx.service, fx.alice, { instructions: "You are Captain Nova.", greeting_message: "Welcome aboard!" });
    const conversation = await createConversation(fx.service, fx.alice, persona.id, "long");
    await seedLongChat(conversation.id, persona.id, 398);
    const llm = fx.service.services.providers.llm;
    const complete = vi.spyOn(llm, "complete");

    // Messages 399 and 400: the history no longer fits, so the reply queues the summary job.
    expect((await sendBlocking(fx.service, fx.alice, conversation.id, "What did I tell you at the very start?")).status).toBe(201);
    const summary = await eventually(async () => knex()("conversation_summaries").where({ conversation_id: conversation.id }).first());
    expect(summary.content).toContain(FACT);
    const summaryCalls = complete.mock.calls.map(([request]) => request as ChatRequest).filter((request) => request.purpose === "summary");
    expect(summaryCalls.length).toBeGreaterThan(0);
    expect(summaryCalls[0]!.model).toBe("local-offline-v1");

    // The next reply's context: instructions, then the summary with the fact; message 1 itself is out of the window.
    expect((await sendBlocking(fx.service, fx.alice, conversation.id, "And who keeps cats?")).status).toBe(201);
    const reply = replyTo(complete.mock.calls, "And who keeps cats?");
    expect(reply.messages[0]).toEqual({ role: "system", content: "You are Captain Nova." });
    expect(reply.messages[1]!.role).toBe("system");
    expect(reply.messages[1]!.content.startsWith(SUMMARY_PREAMBLE)).toBe(true);
    expect(reply.messages[1]!.content).toContain(FACT);
    expect(reply.messages.slice(2).some((turn) => turn.content.includes("Zephyrine"))).toBe(false);
    const read = await (await fx.service.fetch(`/v1/conversations/${conversation.id}`, { headers: fx.alice.auth })).json();
    expect(read.message_count).toBe(402);
    complete.mockRestore();

    // The data export carries the summaries with the conversation.
    const archive = await archiveOf(fx.service.services, fx.alice.id);
    const exported = (archive.conversations as { id: string; summaries: { content: string }[] }[]).find((row) => row.id === conversation.id)!;
    expect(exported.summaries.some((row) => row.content.includes(FACT))).toBe(true);
  });

  it("keeps summaries per path prefix: a branch from before the summarised part does not see it", async () => {
    const persona = await createPersona(fx.service, fx.alice, { name: "Ada", instructions: "You are Ada.", greeting_message: "Hi." });
    const conversation = await createConversation(fx.service, fx.alice, persona.id, "branch memory");
    const rows = await seedLongChat(conversation.id, persona.id, 398);
    await sendBlocking(fx.service, fx.alice, conversation.id, "Remember?");
    await eventually(async () => knex()("conversation_summaries").where({ conversation_id: conversation.id }).first());
    const complete = vi.spyOn(fx.service.services.providers.llm, "complete");
    // Editing the first message: the new branch shares nothing with the summarised prefix.
    const edited = await fx.service.clientFor(fx.alice).POST("/v1/conversations/{id}/messages/{message_id}/edit", {
      params: { path: { id: conversation.id, message_id: rows[0]!.id } },
      body: { content: "Let us start over." },
    });
    expect(edited.response.status).toBe(201);
    const reply = replyTo(complete.mock.calls, "Let us start over.");
    expect(reply.messages.map((turn) => turn.content)).toEqual(["You are Ada.", "Hi.", "Let us start over."]);
    complete.mockRestore();
  });

  it("finds a summary that fell far behind a 1,000-message path, though a turn walks only its newest part", async () => {
    const persona = await createPersona(fx.service, fx.alice, { name: "Orla", instructions: "You are Orla.", greeting_message: "Hello." });
    const conversation = await createConversation(fx.service, fx.alice, persona.id, "lagging memory");
    const rows = await seedLongChat(conversation.id, persona.id, 1000);
    // A summary through message 300: 700 messages behind the leaf, beyond the turn's walk of the window and as much again.
    const through = rows[299]!;
    const content = "- The user's sister Zephyrine lives in Reykjavik.";
    await knex()("conversation_summaries").insert({ conversation_id: conversation.id, through_message_id: through.id, through_depth: through.depth, content, content_tokens: 12, created_at: new Date() });
    const complete = vi.spyOn(fx.service.services.providers.llm, "complete");
    expect((await sendBlocking(fx.service, fx.alice, conversation.id, "Where does my sister live?")).status).toBe(201);
    const reply = replyTo(complete.mock.calls, "Where does my sister live?");
    complete.mockRestore();
    expect(reply.messages[1]!.content.startsWith(SUMMARY_PREAMBLE)).toBe(true);
    expect(reply.messages[1]!.content).toContain("Zephyrine");
    // The history is the newest part of the path, ending with the new question.
    expect(reply.messages.at(-1)).toEqual({ role: "user", content: "Where does my sister live?" });
    expect(reply.messages.some((turn) => turn.content.startsWith("Note 300:"))).toBe(false);
  });

  it("puts the summary right after the instructions and within its share of the budget", () => {
    const assembled = assembleContext({
      instructions: "You are Captain Nova.",
      history: [{ role: "assistant", content: "Recent reply" }, { role: "user", content: "Recent question" }],
      userMessage: "Now?",
      knowledge: [],
      summary: "- fact ".repeat(2000),
      budget: 1000,
    });
    expect(assembled.turns.map((turn) => turn.role)).toEqual(["system", "system", "user", "assistant", "user"]);
    expect(assembled.turns[1]!.content.startsWith(SUMMARY_PREAMBLE)).toBe(true);
    expect(assembled.tokens).toBeLessThanOrEqual(1000);
    expect(assembled.turns[1]!.content.length).toBeLessThan(1000);
  });
});
