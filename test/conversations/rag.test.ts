import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConversation, createPersona, readEvents, sendBlocking, sendStream } from "../support/chat.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { settled, uploaded } from "../knowledge/helpers.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// Retrieval-augmented replies: the persona's knowledge goes into the model's context, marked with its
// document, and the reply cites the chunks used; another user's chat never receives them.
const RINGS = "Saturn's rings are made mostly of water ice, with some rock and dust. The rings are less than a kilometre thick.";
const VOLCANO = "Olympus Mons on Mars is the tallest volcano in the solar system, about three times the height of Everest.";
const TEA = "Green tea is steamed or pan-fired soon after picking, which keeps its leaves from oxidising.";

/**
 * The body of the last model request that asked for a reply: the title job asks the same endpoint
 * after the first exchange, and may come after the reply on a busy machine.
 */
const lastReplyRequest = (fake: FakeOpenAI) =>
  fake.requests.filter((r) => r.path === "/v1/chat/completions" && !JSON.stringify(r.body).includes("Write a short title")).at(-1)!.body;

for (const provider of ["offline", "openai"] as const) {
  describe(`retrieval-augmented replies (${provider} model and embeddings)`, () => {
    let fake: FakeOpenAI | undefined;
    let service: TestService;
    let owner: TestUser;
    let other: TestUser;
    let persona: { id: string };

    beforeAll(async () => {
      fake = provider === "openai" ? await startFakeOpenAI() : undefined;
      service = await startTestService({ env: fake ? { EMBEDDINGS_PROVIDER: "openai", OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test" } : {} });
      owner = await registerUser(service);
      other = await registerUser(service);
      persona = await createPersona(service, owner, { name: "Professor Orbit", instructions: "You are Professor Orbit.", is_public: true });
      for (const [name, text] of [["saturn.md", RINGS], ["mars.txt", VOLCANO], ["tea.md", TEA]] as const) {
        const document = await uploaded(service, owner, persona.id, name, text);
        expect((await settled(service, owner, persona.id, document.id)).status).toBe("ready");
      }
    });

    afterAll(async () => {
      await service?.close();
      await fake?.close();
    });

    it("puts the relevant chunk into a blocking reply's context and cites it", async () => {
      const conversation = await createConversation(service, owner, persona.id);
      const body = await (await sendBlocking(service, owner, conversation.id, "What are Saturn's rings made of?")).json();
      const citations = body.assistant_message.citations as { filename: string; chunk_index: number; similarity: number }[];
      // Only the relevant document: unrelated excerpts are left out of the context.
      expect(citations.map((c) => c.filename)).toEqual(["saturn.md"]);
      expect(citations[0]).toMatchObject({ filename: "saturn.md", chunk_index: 0 });
      expect(citations[0]!.similarity).toBeGreaterThan(0);
      if (fake) {
        const sent = lastReplyRequest(fake) as { messages: { role: string; content: string }[] };
        expect(sent.messages[1]!.role).toBe("system");
        expect(sent.messages[1]!.content).toContain(`[source: saturn.md#0]\n${RINGS}`);
        expect(sent.messages[1]!.content).not.toContain("Green tea");
      } else {
        // The offline model quotes the first excerpt and names its source.
        expect(body.assistant_message.content).toContain("saturn.md#0");
      }
      const read = await (await service.fetch(`/v1/conversations/${conversation.id}`, { headers: owner.auth })).json();
      expect(read.messages.at(-1).citations).toEqual(citations);
    });

    it("cites the chunks of a streamed reply on the stored message", async () => {
      const conversation = await createConversation(service, owner, persona.id);
      const { events } = await readEvents(await sendStream(service, owner, conversation.id, "Which volcano on Mars is the tallest?"));
      const done = JSON.parse(events.at(-1)!.data);
      const read = await (await service.fetch(`/v1/conversations/${conversation.id}`, { headers: owner.auth })).json();
      const reply = read.messages.find((m: { id: string }) => m.id === done.message_id);
      expect(reply.citations[0]).toMatchObject({ filename: "mars.txt" });
      // `done` carries them too, with the reply's usage (issue 13, item 10).
      expect(done.citations).toEqual(reply.citations);
      expect(done.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number) });
      expect(done.usage.output_tokens).toBeGreaterThan(0);
    });

    it("gives another user's chat with the public persona none of its knowledge", async () => {
      const conversation = await createConversation(service, other, persona.id);
      const body = await (await sendBlocking(service, other, conversation.id, "What are Saturn's rings made of?")).json();
      expect(body.assistant_message.citations).toEqual([]);
      expect(body.assistant_message.content).not.toContain("saturn.md");
      if (fake) {
        const sent = lastReplyRequest(fake) as { messages: { content: string }[] };
        expect(JSON.stringify(sent.messages)).not.toContain("water ice");
      }
    });
  });
}
