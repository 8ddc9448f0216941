import { describe, expect, it } from "vitest";
import { createConversation, sendBlocking } from "../support/chat.ts";
import { useServiceWithFakeOpenAI } from "../support/fixtures.ts";
import { uploadCard, v3Card } from "./helpers.ts";

// End to end: an imported card's lorebook and sample messages reach the model's context, captured
// at the fake OpenAI-compatible server; creator_notes never do.
const fixture = useServiceWithFakeOpenAI({ AUTO_AVATARS: "false" });

type Sent = { messages: { role: string; content: string }[] };

/** The system turn of the reply to `text` (not of the title the service asks for beside it). */
const systemPromptFor = (text: string) => {
  const call = fixture.fake.requests.find((request) => request.path === "/v1/chat/completions" && (request.body as Sent).messages.at(-1)?.content === text);
  return (call!.body as Sent).messages[0]!;
};

describe("a persona imported from a card replies with its lorebook", () => {
  it("inserts matched entries around the character's text, the constant one always, and the sample messages", async () => {
    const response = await uploadCard(fixture.service, fixture.alice, JSON.stringify(v3Card()), "nova.json");
    const persona = await response.json();
    expect(response.status, JSON.stringify(persona)).toBe(201);
    const conversation = await createConversation(fixture.service, fixture.alice, persona.id);

    expect((await sendBlocking(fixture.service, fixture.alice, conversation.id, "Hello there")).status).toBe(201);
    expect((await sendBlocking(fixture.service, fixture.alice, conversation.id, "Have you seen M31?")).status).toBe(201);
    expect((await sendBlocking(fixture.service, fixture.alice, conversation.id, "Where is ærøskøbing?")).status).toBe(201);
    const [first, second, third] = ["Hello there", "Have you seen M31?", "Where is ærøskøbing?"].map(systemPromptFor);

    // The stored instructions keep the card's macros; the model reads them filled (issue 34 item 2).
    expect(persona.instructions).toContain("{{char}}");
    const user = fixture.alice.username;
    const instructions = persona.instructions.replaceAll("{{char}}", persona.name).replaceAll("{{user}}", user);
    expect(first!.role).toBe("system");
    expect(first!.content).toBe(`${instructions}\n\nThe ship is named Lodestar.\n\n## Example dialogue\n<START>\n${user}: What is that star?\nCaptain Nóva 星: That is Vega, cadet.`);
    expect(second!.content).toBe(
      `${instructions}\n\nThe ship is named Lodestar.\n\nAndromeda is 2.5 million light-years away; Nova once charted it.\n\n## Example dialogue\n<START>\n${user}: What is that star?\nCaptain Nóva 星: That is Vega, cadet.`,
    );
    // scan_depth 3: the M31 question is still among the last three messages, so both entries come in.
    expect(third!.content.startsWith(`Ærøskøbing is where Nova grew up, by the sea. 🌊\n\n${instructions}`)).toBe(true);
    expect(third!.content).toContain("Andromeda is 2.5 million");
    for (const prompt of [first, second, third]) {
      expect(prompt!.content).not.toContain("Never inserted.");
      expect(prompt!.content).not.toContain("Best with curious users");
    }
  });

  it("leaves the context of a persona without a card as it was", async () => {
    const made = await fixture.service.clientFor(fixture.alice).POST("/v1/personas", { body: { name: "Plain", instructions: "You are Plain.", greeting_message: "Hi." } });
    const persona = made.data!;
    const conversation = await createConversation(fixture.service, fixture.alice, persona.id);
    expect((await sendBlocking(fixture.service, fixture.alice, conversation.id, "ship M31")).status).toBe(201);
    expect(systemPromptFor("ship M31")).toEqual({ role: "system", content: "You are Plain." });
  });
});
