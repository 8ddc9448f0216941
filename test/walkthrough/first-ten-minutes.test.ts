import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createClient, type PersonaClient, type Schemas } from "../../sdk/src/index.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { until } from "../support/wait.ts";

// Issue 34's walk-through: a new user's first ten minutes, driven through the SDK as a character
// platform's user would go: register, import a SillyTavern-style card (V2 JSON with `{{char}}` and
// `{{user}}` and two alternate greetings), open a conversation that starts with the card's
// greeting, choose an alternate greeting, chat with and without a relevant knowledge document,
// publish to the Roleplay shelf and find it there. Each step builds on the one before, on the
// offline default (no model, no network).
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service?.close();
});

const suffix = randomBytes(4).toString("hex");
const CARD = {
  spec: "chara_card_v2",
  spec_version: "2.0",
  data: {
    name: "Captain Nova",
    description: "{{char}} is a retired starship captain who explains the sky to {{user}}.",
    personality: "Warm and patient.",
    scenario: "{{user}} visits {{char}} at the observatory.",
    first_mes: "Welcome aboard, {{user}}! I am {{char}}. Which star shall we visit first?",
    mes_example: "<START>\n{{user}}: What is that star?\n{{char}}: That is Vega.",
    system_prompt: "You are {{char}}. Stay in character.",
    alternate_greetings: ["Ahoy, {{user}}! {{char}} at your service.", "<USER>! The telescope is ready, says <BOT>."],
    tags: ["space", "roleplay"],
    creator: "mara",
    character_version: "1.0",
    extensions: {},
  },
};

// What the steps hand on to each other.
let client: PersonaClient;
let persona: Schemas["Persona"];
let conversation: Schemas["Conversation"];
let chosen: Schemas["Message"];

describe("a new user's first ten minutes", () => {
  it("registers and names themself", async () => {
    const anonymous = createClient({ baseUrl: service.url });
    const session = await anonymous.auth.register({ email: `walk_${suffix}@example.com`, username: `walk_${suffix}`, password: "Correct-horse-9" });
    client = createClient({ baseUrl: service.url, accessToken: session.access_token, refreshToken: session.refresh_token });
    expect(await client.auth.updateMe({ display_name: "Ada" })).toMatchObject({ username: `walk_${suffix}`, display_name: "Ada" });
  });

  it("imports a SillyTavern character card", async () => {
    persona = await client.personas.importCard(new Blob([JSON.stringify(CARD)]), { filename: "captain-nova.json" });
    expect(persona).toMatchObject({ name: "Captain Nova", is_public: false });
  });

  it("opens a conversation that starts with the card's greeting, its macros filled, and no message counted", async () => {
    conversation = await client.conversations.create({ persona_id: persona.id });
    expect(conversation.message_count).toBe(0);
    const { messages } = await client.conversations.get(conversation.id);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({
      id: conversation.active_message_id,
      role: "assistant",
      greeting: true,
      content: "Welcome aboard, Ada! I am Captain Nova. Which star shall we visit first?",
      alternative_index: 0,
      alternative_count: 3,
    });
    // The message list says the same: there is nothing for a client to inject.
    const listed: Schemas["Message"][] = [];
    for await (const message of client.conversations.messages.list(conversation.id)) listed.push(message);
    expect(listed).toEqual(messages);
    expect((await client.billing.usage()).usage.messages_sent).toBe(0);
  });

  it("chooses one of the card's alternate greetings", async () => {
    const greetings: Schemas["Message"][] = [];
    for await (const branch of client.conversations.branches(conversation.id)) greetings.push(branch.last_message);
    expect(greetings.map((greeting) => greeting.content).sort()).toEqual([
      "Ada! The telescope is ready, says Captain Nova.",
      "Ahoy, Ada! Captain Nova at your service.",
      "Welcome aboard, Ada! I am Captain Nova. Which star shall we visit first?",
    ]);
    chosen = greetings.find((greeting) => greeting.alternative_index === 2)!;
    const after = await client.conversations.select(conversation.id, chosen.id);
    expect(after).toMatchObject({ active_message_id: chosen.id, message_count: 0 });
    expect(after.messages.map((message) => message.content)).toEqual(["Ada! The telescope is ready, says Captain Nova."]);
  });

  it("chats: the chosen greeting is the history the persona answers after, once", async () => {
    const stream = client.conversations.stream(conversation.id, { content: "Show me Vega, please." });
    const reply = await stream.text();
    // The offline model says what it was given: the message, and one earlier one (the greeting).
    expect(reply).toContain('You said "Show me Vega, please."');
    expect(reply).toContain("We have exchanged 1 earlier message.");
    const read = await client.conversations.get(conversation.id);
    expect(read.message_count).toBe(2);
    expect(read.messages.map((message) => [message.role, message.greeting ?? false])).toEqual([["assistant", true], ["user", false], ["assistant", false]]);
    expect(read.messages[0]!.id).toBe(chosen.id);
    expect(read.messages[1]!.parent_id).toBe(chosen.id);
    expect((await client.billing.usage()).usage.messages_sent).toBe(1);
  });

  it("the model reads the card's instructions, greeting and example dialogue with {{char}} and {{user}} filled", async () => {
    const asked = vi.spyOn(service.services.providers.llm, "stream");
    await client.conversations.stream(conversation.id, { content: "And which star is next?" }).text();
    const request = asked.mock.calls.at(-1)![0];
    const context = JSON.stringify(request.messages);
    expect(context).toContain("You are Captain Nova. Stay in character.");
    expect(context).toContain("Ada! The telescope is ready, says Captain Nova.");
    expect(context).toContain("Ada: What is that star?");
    expect(context).not.toMatch(/\{\{(char|user)\}\}|<USER>|<BOT>/i);
    // The stored card keeps its macros: an export gives the card back as it came.
    const exported = (await client.personas.exportCard(persona.id)) as unknown as { data: { first_mes: string } };
    expect(exported.data.first_mes).toBe(CARD.data.first_mes);
  });

  it("chats without a relevant knowledge document: the reply cites nothing", async () => {
    await client.conversations.stream(conversation.id, { content: "Hello there, how are you?" }).text();
    const read = await client.conversations.get(conversation.id);
    expect(read.messages.at(-1)).toMatchObject({ role: "assistant" });
    expect(read.messages.at(-1)!.citations ?? []).toEqual([]);
  });

  it("uploads a knowledge document and asks about it: the reply cites that document", async () => {
    const notes = "# Vega\n\nVega is the brightest star in the constellation Lyra, 25 light-years from the Sun.";
    const uploaded = await client.knowledge.upload(persona.id, new Blob([notes]), { filename: "vega.md" });
    await until("the document to be ready", async () => (await client.knowledge.get(persona.id, uploaded.id)).status === "ready");
    await client.conversations.stream(conversation.id, { content: "How far away is Vega in the constellation Lyra?" }).text();
    const read = await client.conversations.get(conversation.id);
    expect(read.messages.at(-1)!.citations?.map((citation) => citation.filename)).toContain("vega.md");
  });

  it("publishes the persona to the Roleplay shelf", async () => {
    await client.personas.update(persona.id, { is_public: true });
    const listing = await client.studio.publish(persona.id, { category: "roleplay", tags: ["space"], pricing: "free" });
    expect(listing).toMatchObject({ persona_id: persona.id, category: "roleplay" });
  });

  it("finds the persona on the marketplace's Roleplay shelf", async () => {
    const shelf: Schemas["Listing"][] = [];
    for await (const listing of client.marketplace.list({ category: "roleplay", q: "Captain Nova" })) shelf.push(listing);
    expect(shelf.map((listing) => listing.persona_id)).toContain(persona.id);
  });
});
