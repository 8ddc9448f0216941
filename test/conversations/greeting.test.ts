import { randomUUID } from "node:crypto";
import { v7 as uuidv7 } from "uuid";
import { describe, expect, it } from "vitest";
import type { Schemas } from "../../sdk/src/index.ts";
import { uploadCard } from "../cards/helpers.ts";
import { expectApiError, expectOk } from "../support/assertions.ts";
import { useServiceWithFakeOpenAI } from "../support/fixtures.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { eventually } from "../support/wait.ts";

// Issue 34 item 1: a new conversation's greeting is its first stored message (a card's alternate
// greetings its alternatives), counted in neither `message_count` nor the quota nor any statistic,
// and it reaches the model once, in its place. Replies come from a fake OpenAI server on loopback
// through the real `openai` package, so that what the model is given can be compared.
const fx = useServiceWithFakeOpenAI({ LLM_TIMEOUT_MS: "5000" });

type Message = Schemas["Message"];
type Turn = { role: string; content: string };

const knex = () => fx.service.services.db.knex;
const api = (user: TestUser) => fx.service.clientFor(user);
/** The model's context of the reply to `text` (the service's jobs ask the same fake for titles). */
const contextOf = (text: string): Turn[] => {
  const bodies = fx.fake.requests.filter((r) => r.path === "/v1/chat/completions").map((r) => r.body as { messages: Turn[] });
  const call = bodies.findLast((body) => body.messages.at(-1)?.content === text);
  expect(call, `the model was asked to reply to "${text}"`).toBeDefined();
  return call!.messages;
};
const used = async (user: TestUser) => (await expectOk(api(user).GET("/v1/billing/usage"))).usage.messages_sent;

async function persona(user: TestUser, fields: { name?: string; instructions?: string; greeting_message?: string; is_public?: boolean } = {}) {
  return expectOk(api(user).POST("/v1/personas", { body: { name: "Captain Nova", instructions: "You are Captain Nova.", greeting_message: "Welcome aboard!", ...fields } }), 201);
}
const start = (user: TestUser, personaId: string, title = "greeting") => api(user).POST("/v1/conversations", { body: { persona_id: personaId, title } });
const read = (user: TestUser, id: string) => expectOk(api(user).GET("/v1/conversations/{id}", { params: { path: { id } } }));
const list = (user: TestUser, id: string) => expectOk(api(user).GET("/v1/conversations/{id}/messages", { params: { path: { id } } }));
const send = (user: TestUser, id: string, content: string) => expectOk(api(user).POST("/v1/conversations/{id}/messages", { params: { path: { id } }, body: { content } }), 201);
const select = (user: TestUser, id: string, messageId: string) =>
  api(user).POST("/v1/conversations/{id}/messages/{message_id}/select", { params: { path: { id, message_id: messageId } } });

/** A persona row written straight to the database: no greeting yet, and no greeting job queued for it. */
async function personaWithoutGreeting(user: TestUser): Promise<string> {
  const id = uuidv7();
  const now = new Date();
  await knex()("personas").insert({ id, creator_id: user.id, name: "Orla", handle: `orla-${id.slice(-8)}`, instructions: "You are Orla.", model: fx.service.services.config.llm.model, created_at: now, updated_at: now });
  return id;
}

/** A card (V2 JSON) with SillyTavern's macros, imported by `user`. */
async function importCard(user: TestUser, alternates: string[]) {
  const card = {
    spec: "chara_card_v2",
    spec_version: "2.0",
    data: { name: "Captain Nova", description: "{{char}} charts the stars.", first_mes: "Welcome aboard, {{user}}! I am {{char}}.", alternate_greetings: alternates },
  };
  const response = await uploadCard(fx.service, user, JSON.stringify(card), "nova.json", "application/json");
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(201);
  return body as { id: string };
}

describe("a new conversation's greeting", () => {
  it("is the first stored message, read with the conversation and the message list, and counted nowhere", async () => {
    const user = await registerUser(fx.service);
    const { id: personaId } = await persona(user);
    const quota = await used(user);
    const conversation = await expectOk(start(user, personaId), 201);
    expect(conversation).toMatchObject({ message_count: 0, usage: { input_tokens: 0, output_tokens: 0 } });

    const detail = await read(user, conversation.id);
    expect(detail.messages).toEqual([
      {
        id: conversation.active_message_id,
        conversation_id: conversation.id,
        role: "assistant",
        content: "Welcome aboard!",
        created_at: conversation.created_at,
        citations: [],
        parent_id: null,
        alternative_index: 0,
        alternative_count: 1,
        greeting: true,
      },
    ]);
    expect((await list(user, conversation.id)).data).toEqual(detail.messages);

    // Not the quota's, not the persona's count, no message event, no statistic.
    expect(await used(user)).toBe(quota);
    expect((await expectOk(api(user).GET("/v1/personas/{id}", { params: { path: { id: personaId } } }))).message_count).toBe(0);
    expect(await knex()("event_outbox").where({ type: "message.created" }).whereRaw("data->>'conversation_id' = ?", [conversation.id])).toEqual([]);
    expect(await knex()("event_outbox").where({ type: "conversation.created" }).whereRaw("data->>'conversation_id' = ?", [conversation.id])).toHaveLength(1);
    expect(await knex()("persona_activity_hourly").where({ persona_id: personaId })).toEqual([]);
    expect(await knex()("persona_daily_messages").where({ persona_id: personaId })).toEqual([]);
  });

  it("reaches the model once, in its place, before the exchange that follows it", async () => {
    const user = await registerUser(fx.service);
    const { id: personaId } = await persona(user);
    const conversation = await expectOk(api(user).POST("/v1/conversations", { body: { persona_id: personaId } }), 201);
    const greetingId = conversation.active_message_id!;
    const exchange = await send(user, conversation.id, "Which planet is that?");
    expect(contextOf("Which planet is that?")).toEqual([
      { role: "system", content: "You are Captain Nova." },
      { role: "assistant", content: "Welcome aboard!" },
      { role: "user", content: "Which planet is that?" },
    ]);
    expect(exchange.user_message.parent_id).toBe(greetingId);

    const detail = await read(user, conversation.id);
    expect(detail).toMatchObject({ message_count: 2, active_message_id: exchange.assistant_message.id });
    expect(detail.messages.map((m) => [m.role, m.greeting ?? false])).toEqual([["assistant", true], ["user", false], ["assistant", false]]);
    // The title still comes from the first exchange, after the first reply (the greeting is none).
    await eventually(async () => (await read(user, conversation.id)).title);
    // The statistics count the exchange alone, and forget it with the conversation without going below zero.
    const hourly = await knex()("persona_activity_hourly").where({ persona_id: personaId }).sum({ n: "messages" }).first();
    expect(Number(hourly?.n)).toBe(2);
    expect((await expectOk(api(user).GET("/v1/personas/{id}", { params: { path: { id: personaId } } }))).message_count).toBe(2);
    await expectOk(api(user).DELETE("/v1/conversations/{id}", { params: { path: { id: conversation.id } } }));
    expect(await knex()("persona_daily_messages").where({ persona_id: personaId })).toEqual([]);
    expect(await knex()("persona_daily_users").where({ persona_id: personaId })).toEqual([]);
  });

  it("costs no quota: a user whose messages are used up still opens a conversation with it", async () => {
    const user = await registerUser(fx.service);
    const { id: personaId } = await persona(user);
    const usage = await expectOk(api(user).GET("/v1/billing/usage"));
    await knex()("usage_counters").insert({ user_id: user.id, period_start: usage.period_start.slice(0, 10), messages_sent: usage.usage.messages_limit })
      .onConflict(["user_id", "period_start"]).merge(["messages_sent"]);
    const conversation = await expectOk(start(user, personaId), 201);
    expect((await read(user, conversation.id)).messages).toMatchObject([{ greeting: true, content: "Welcome aboard!" }]);
    await expectApiError(api(user).POST("/v1/conversations/{id}/messages", { params: { path: { id: conversation.id } }, body: { content: "Hi" } }), 402, "plan_limit_exceeded");
    expect(await used(user)).toBe(usage.usage.messages_limit);
  });

  it("is generated when the conversation starts if the persona's greeting is not written yet; a failing model stores nothing", async () => {
    const user = await registerUser(fx.service);
    const personaId = await personaWithoutGreeting(user);
    fx.fake.chat.next({ status: 500 });
    await expectApiError(start(user, personaId), 502, "upstream_error");
    expect(await knex()("conversations").where({ persona_id: personaId })).toEqual([]);
    expect(await knex()("messages").where({ persona_id: personaId })).toEqual([]);

    fx.fake.chat.next({ reply: "  Ahoy there, traveller!\n" });
    const conversation = await expectOk(start(user, personaId), 201);
    expect((await read(user, conversation.id)).messages).toMatchObject([{ greeting: true, content: "Ahoy there, traveller!" }]);
    // Written for the persona too, as its job would have: the next conversation asks the model nothing.
    expect((await expectOk(api(user).GET("/v1/personas/{id}", { params: { path: { id: personaId } } }))).greeting_message).toBe("Ahoy there, traveller!");
    const calls = fx.fake.requests.length;
    const again = await expectOk(start(user, personaId), 201);
    expect((await read(user, again.id)).messages).toMatchObject([{ content: "Ahoy there, traveller!" }]);
    expect(fx.fake.requests).toHaveLength(calls);
  });

  it("keeps its macros as stored and shows them filled for its reader; another user's public persona greets the same way", async () => {
    const [owner, reader] = [await registerUser(fx.service), await registerUser(fx.service)];
    const { id: personaId } = await persona(owner, { name: "Vega", instructions: "You are Vega.", greeting_message: "Hello {{user}}, I am {{char}}. <USER>?", is_public: true });
    await expectOk(api(reader).PUT("/v1/auth/me", { body: { display_name: "Ada Lovelace" } }));
    const conversation = await expectOk(start(reader, personaId), 201);
    const shown = "Hello Ada Lovelace, I am Vega. Ada Lovelace?";
    expect((await read(reader, conversation.id)).messages).toMatchObject([{ content: shown, greeting: true }]);
    expect((await list(reader, conversation.id)).data).toMatchObject([{ content: shown }]);
    const stored = await knex()("messages").where({ id: conversation.active_message_id }).first();
    expect(stored.content).toBe("Hello {{user}}, I am {{char}}. <USER>?");
    // Search reads the stored text: "Hello" finds it, and it is shown filled.
    const hits = await expectOk(api(reader).GET("/v1/conversations/search", { params: { query: { q: "Hello" } } }));
    expect(hits.data.find((hit) => hit.message.id === conversation.active_message_id)?.message.content).toBe(shown);

    // Its owner reads nothing of the reader's conversation.
    await expectApiError(api(owner).GET("/v1/conversations/{id}", { params: { path: { id: conversation.id } } }), 404, "not_found");
    await expectApiError(select(owner, conversation.id, conversation.active_message_id!), 404, "not_found");
  });
});

describe("a card's alternate greetings", () => {
  it("are alternatives of the first message: listed as branches, chosen with select, and only the chosen one is in the context", async () => {
    const user = await registerUser(fx.service);
    const card = await importCard(user, ["Ahoy, {{user}}!", "   ", "¡Hola, cadete! 🚀"]);
    const conversation = await expectOk(start(user, card.id), 201);
    const first = (await read(user, conversation.id)).messages;
    // The blank one is left out; the macros are filled for the reader (no display name: the username).
    expect(first).toMatchObject([{ content: `Welcome aboard, ${user.username}! I am Captain Nova.`, greeting: true, alternative_index: 0, alternative_count: 3 }]);

    const branches = await expectOk(api(user).GET("/v1/conversations/{id}/branches", { params: { path: { id: conversation.id } } }));
    expect(branches.total).toBe(3);
    const greetings = new Map(branches.data.map((b) => [b.last_message.alternative_index, b]));
    // Each a branch of one message, the greeting, sharing none with the others.
    expect([...greetings.values()].every((b) => b.message_count === 1 && b.fork_point_id === null && b.last_message.greeting)).toBe(true);
    expect(greetings.get(1)!.last_message.content).toBe(`Ahoy, ${user.username}!`);
    const hola = greetings.get(2)!.last_message;
    expect(hola.content).toBe("¡Hola, cadete! 🚀");

    const chosen = await expectOk(select(user, conversation.id, hola.id));
    expect(chosen).toMatchObject({ message_count: 0, active_message_id: hola.id });
    expect(chosen.messages.map((m: Message) => m.id)).toEqual([hola.id]);
    const exchange = await send(user, conversation.id, "Where are we going?");
    expect(exchange.user_message.parent_id).toBe(hola.id);
    const context = contextOf("Where are we going?").map((turn) => turn.content);
    expect(context).toContain("¡Hola, cadete! 🚀");
    expect(context.some((text) => text.startsWith("Welcome aboard"))).toBe(false);

    // Back to the first greeting (nothing follows it), then to the chosen one and its exchange.
    expect((await expectOk(select(user, conversation.id, conversation.active_message_id!))).messages.map((m: Message) => m.id)).toEqual([conversation.active_message_id]);
    const back = await expectOk(select(user, conversation.id, hola.id));
    expect(back.messages.map((m: Message) => m.id)).toEqual([hola.id, exchange.user_message.id, exchange.assistant_message.id]);
    expect(back.message_count).toBe(2);
  });

  it("are refused as replies to regenerate, and another user reaches none of them", async () => {
    const [user, mallory] = [await registerUser(fx.service), await registerUser(fx.service)];
    const card = await importCard(user, ["Ahoy!"]);
    const conversation = await expectOk(start(user, card.id), 201);
    const greeting = conversation.active_message_id!;
    const regenerate = (who: TestUser) =>
      api(who).POST("/v1/conversations/{id}/messages/{message_id}/regenerate", { params: { path: { id: conversation.id, message_id: greeting } } });
    const refused = await expectApiError(regenerate(user), 409, "conflict");
    expect(refused.error.message).toMatch(/greeting/);
    await expectApiError(regenerate(mallory), 404, "not_found");
    await expectApiError(select(mallory, conversation.id, greeting), 404, "not_found");
    await expectApiError(api(mallory).GET("/v1/conversations/{id}/branches", { params: { path: { id: conversation.id } } }), 404, "not_found");
    await expectApiError(select(user, conversation.id, randomUUID()), 404, "not_found");
    await expectApiError(select(user, conversation.id, "not-a-uuid"), 400, "invalid_request");
    expect(await knex()("messages").where({ conversation_id: conversation.id })).toHaveLength(2);
  });

  it("are all stored at a card's limit of 100", async () => {
    const user = await registerUser(fx.service);
    const card = await importCard(user, Array.from({ length: 100 }, (_, i) => `Greeting ${i + 1}`));
    const conversation = await expectOk(start(user, card.id), 201);
    expect((await read(user, conversation.id)).messages).toMatchObject([{ alternative_index: 0, alternative_count: 101 }]);
    const branches = await expectOk(api(user).GET("/v1/conversations/{id}/branches", { params: { path: { id: conversation.id }, query: { limit: 100, offset: 100 } } }));
    expect(branches).toMatchObject({ total: 101, has_more: false });
    expect(Number((await knex()("messages").where({ conversation_id: conversation.id, depth: 0 }).count({ n: "*" }).first())?.n)).toBe(101);
  });
});

describe("a conversation from before greetings were stored", () => {
  it("keeps none: its replies see only what it holds", async () => {
    const user = await registerUser(fx.service);
    const { id: personaId } = await persona(user);
    const id = uuidv7();
    const now = new Date();
    await knex()("conversations").insert({ id, user_id: user.id, persona_id: personaId, title: "older", message_count: 0, active_message_id: null, created_at: now, updated_at: now });
    expect((await read(user, id)).messages).toEqual([]);
    const exchange = await send(user, id, "Are you there?");
    expect(exchange.user_message.parent_id).toBeNull();
    expect(contextOf("Are you there?")).toEqual([
      { role: "system", content: "You are Captain Nova." },
      { role: "user", content: "Are you there?" },
    ]);
    expect(await read(user, id)).toMatchObject({ message_count: 2 });
  });
});
