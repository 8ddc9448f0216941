import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportCard, uploadCard } from "../cards/helpers.ts";
import { addMember, makeRoom } from "../rooms/helpers.ts";
import { expectOk } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { ScriptedModel } from "./fakes.ts";

// Issue 34 item 2: `{{char}}` and `{{user}}` (and `<BOT>`, `<CHAR>`, `<USER>`), in any letter case,
// are filled when a reply is built, in every text of the persona the model reads: instructions,
// post-history instructions, lorebook entries, sample messages, its past replies; with the
// persona's name and the name of the person it answers. What is stored keeps them.
let service: TestService;
let model: ScriptedModel;
let alice: TestUser;
let bob: TestUser;

const MACRO = /\{\{(char|user)\}\}|<(user|bot|char)>/i;

beforeAll(async () => {
  model = new ScriptedModel();
  service = await startTestService({ providers: { llm: model }, env: { AUTO_AVATARS: "false", RATE_LIMIT_PER_MINUTE: "100000" } });
  [alice, bob] = await Promise.all([registerUser(service), registerUser(service)]);
  await service.services.db.knex("users").whereIn("id", [alice.id, bob.id]).update({ plan: "creator" });
  await expectOk(service.clientFor(alice).PUT("/v1/auth/me", { body: { display_name: "Mara Lindqvist" } }));
});

afterAll(() => service?.close());

/** The messages of the last reply the model was asked for, from `from` on. */
const lastReply = (from: number) => {
  const replies = model.requests.slice(from).filter((request) => request.purpose === "reply");
  expect(replies.length).toBeGreaterThan(0);
  return replies.at(-1)!.messages;
};

async function persona(user: TestUser, fields: { name: string; instructions: string; greeting_message?: string; is_public?: boolean }) {
  return expectOk(service.clientFor(user).POST("/v1/personas", { body: { greeting_message: "Hello.", ...fields } }), 201);
}

async function chat(user: TestUser, personaId: string, content: string) {
  const conversation = await expectOk(service.clientFor(user).POST("/v1/conversations", { body: { persona_id: personaId } }), 201);
  const from = model.requests.length;
  await expectOk(service.clientFor(user).POST("/v1/conversations/{id}/messages", { params: { path: { id: conversation.id } }, body: { content } }), 201);
  return { conversation, messages: lastReply(from) };
}

describe("in a conversation", () => {
  it("fills the instructions with the persona's name and the caller's display name, in any letter case; the stored persona keeps the macros", async () => {
    const instructions = "You are {{char}}. You speak with {{User}}. <BOT> never forgets <user>'s name; {{CHAR}} and <Char> are you. Keep {{random::a,b}}, {{time}} and {{ user }} as written.";
    const made = await persona(alice, { name: "Captain Nova", instructions, greeting_message: "Welcome aboard, {{user}}! I am {{char}}." });
    const { messages } = await chat(alice, made.id, "Hello!");
    expect(messages[0]).toEqual({
      role: "system",
      content: "You are Captain Nova. You speak with Mara Lindqvist. Captain Nova never forgets Mara Lindqvist's name; Captain Nova and Captain Nova are you. Keep {{random::a,b}}, {{time}} and {{ user }} as written.",
    });
    // No macro reaches the model in any turn, the greeting's among them.
    for (const message of messages) expect(message.content).not.toMatch(MACRO);
    const stored = await expectOk(service.clientFor(alice).GET("/v1/personas/{id}", { params: { path: { id: made.id } } }));
    expect(stored.instructions).toBe(instructions);
    expect(stored.greeting_message).toBe("Welcome aboard, {{user}}! I am {{char}}.");
  });

  it("names the username when there is no display name, and whoever chats with a public persona, not its creator", async () => {
    const made = await persona(alice, { name: "Quill", instructions: "You are {{char}}, talking to {{user}}.", is_public: true });
    expect((await chat(bob, made.id, "Hi")).messages[0]!.content).toBe(`You are Quill, talking to ${bob.username}.`);
    expect((await chat(alice, made.id, "Hi")).messages[0]!.content).toBe("You are Quill, talking to Mara Lindqvist.");
  });

  it("follows a rename: {{char}} is the persona's name at reply time", async () => {
    const made = await persona(alice, { name: "Old Name", instructions: "You are {{char}}." });
    await expectOk(service.clientFor(alice).PUT("/v1/personas/{id}", { params: { path: { id: made.id } }, body: { name: "New Name" } }));
    expect((await chat(alice, made.id, "Who are you?")).messages[0]!.content).toBe("You are New Name.");
  });

  it("fills the persona's past replies it reads back, and leaves the user's own words as typed", async () => {
    const made = await persona(alice, { name: "Echo", instructions: "You are Echo.", greeting_message: "Hi there." });
    const { conversation } = await chat(alice, made.id, "Say {{char}} and <USER> for me");
    // The model answered with macros (the scripted model's reply is "Hello."; written here, so that no
    // other call of the model, such as the title job's, can take a scripted answer meant for it).
    const written = await service.services.db.knex("messages").where({ conversation_id: conversation.id, role: "assistant", content: "Hello." }).update({ content: "I am {{char}} and you are {{user}}." });
    expect(written).toBe(1);
    const from = model.requests.length;
    await expectOk(service.clientFor(alice).POST("/v1/conversations/{id}/messages", { params: { path: { id: conversation.id } }, body: { content: "Once more" } }), 201);
    const contents = lastReply(from).map((message) => message.content);
    expect(contents).toContain("Say {{char}} and <USER> for me");
    expect(contents).toContain("I am Echo and you are Mara Lindqvist.");
  });
});

describe("a persona imported from a card", () => {
  const card = {
    spec: "chara_card_v2",
    spec_version: "2.0",
    data: {
      name: "Aria",
      description: "{{char}} is {{user}}'s oldest friend.",
      personality: "Loyal.",
      scenario: "<USER> meets <BOT> at the harbour.",
      first_mes: "*waves* {{user}}! Over here!",
      mes_example: "<START>\n{{user}}: Where were you?\n{{char}}: At the lighthouse, {{user}}.",
      system_prompt: "You are {{char}}.",
      post_history_instructions: "Stay {{char}}; call {{user}} by name.",
      alternate_greetings: ["{{user}}, you came!"],
      character_book: {
        entries: [
          { keys: ["lighthouse"], content: "{{char}} and {{user}} once hid in the lighthouse.", enabled: true, insertion_order: 1 },
          { keys: [], content: "{{char}} owes <USER> a favour.", enabled: true, insertion_order: 0, constant: true },
        ],
      },
      tags: [],
      creator: "",
      character_version: "",
      extensions: {},
    },
  };

  it("fills the instructions, post-history instructions, lorebook entries and sample messages, and exports the card unchanged", async () => {
    const response = await uploadCard(service, alice, JSON.stringify(card), "aria.json");
    const imported = await response.json();
    expect(response.status, JSON.stringify(imported)).toBe(201);
    expect(imported.greeting_message).toBe(card.data.first_mes);
    const { messages } = await chat(alice, imported.id, "Remember the lighthouse?");
    const system = messages[0]!.content;
    expect(system).toContain("You are Aria.");
    expect(system).toContain("Aria is Mara Lindqvist's oldest friend.");
    expect(system).toContain("Mara Lindqvist meets Aria at the harbour.");
    expect(system).toContain("Stay Aria; call Mara Lindqvist by name.");
    expect(system).toContain("Aria owes Mara Lindqvist a favour.");
    expect(system).toContain("Aria and Mara Lindqvist once hid in the lighthouse.");
    expect(system).toContain("Mara Lindqvist: Where were you?\nAria: At the lighthouse, Mara Lindqvist.");
    for (const message of messages) expect(message.content).not.toMatch(MACRO);

    const exported = await exportCard(service, alice, imported.id, "json");
    const { data } = await exported.json();
    for (const field of ["description", "scenario", "first_mes", "mes_example", "system_prompt", "post_history_instructions", "alternate_greetings"] as const) {
      expect(data[field], field).toEqual(card.data[field]);
    }
    expect(data.character_book.entries.map((entry: { content: string }) => entry.content)).toEqual(card.data.character_book.entries.map((entry) => entry.content));
  });
});

describe("elsewhere the engine replies", () => {
  it("in a room, {{user}} is the member the persona answers", async () => {
    const made = await persona(alice, { name: "Host", instructions: "You are {{char}}; you are answering {{user}}.", is_public: true });
    const room = await makeRoom(service, alice, { persona_ids: [made.id] });
    await addMember(service, alice, room.id, bob);
    const send = async (user: TestUser) => {
      const from = model.requests.length;
      await expectOk(service.clientFor(user).POST("/v1/rooms/{id}/messages", { params: { path: { id: room.id } }, body: { content: "@host hello" } }), 201);
      return lastReply(from)[0]!.content;
    };
    expect(await send(bob)).toBe(`You are Host; you are answering ${bob.username}.`);
    expect(await send(alice)).toBe("You are Host; you are answering Mara Lindqvist.");
  });

  it("through the OpenAI-compatible door and the studio's test chat, {{user}} is the caller", async () => {
    const made = await persona(alice, { name: "Door", instructions: "You are {{char}}, serving {{user}}.", is_public: true });
    let from = model.requests.length;
    await expectOk(service.clientFor(bob).POST("/openai/v1/chat/completions", { body: { model: made.id, messages: [{ role: "user", content: "Hi" }] } }));
    expect(lastReply(from)[0]!.content).toBe(`You are Door, serving ${bob.username}.`);
    from = model.requests.length;
    await expectOk(service.clientFor(alice).POST("/v1/studio/{persona_id}/test-chat", { params: { path: { persona_id: made.id } }, body: { message: "Hi" } }));
    expect(lastReply(from)[0]!.content).toBe("You are Door, serving Mara Lindqvist.");
  });
});
