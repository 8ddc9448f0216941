import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { expectApiError, expectOk } from "../support/assertions.ts";
import { readEvents, sendStream } from "../support/chat.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { CORPUS, insertPersona, query, ready, results } from "./helpers.ts";

// Issue 34 item 5: when nothing in the knowledge base is relevant, retrieval finds nothing, so a
// reply has no excerpts and cites nothing; a related question still finds and cites its document.
// With the offline embedder and with an OpenAI-compatible provider (the fake server), on the
// query endpoint and in chat, blocking and streamed.
// Small talk that shares no word with the documents: with the offline embedder relevance is word
// overlap, so "What's your name?" finds a JSON document of `name` fields, and "Good evening" the
// evening star (docs/adr/0287-an-absolute-relevance-floor-on-both-sides-of-retrieval.md).
const SMALL_TALK = ["Hello there", "Hi!", "How are you today?", "Thanks, that was great", "Nice to meet you", "lol ok"];
const UNRELATED = ["What is the capital of France?", "Can you recommend a good science fiction novel?", "How do I change a flat tyre on a bicycle?"];
const RELATED: [string, string][] = [
  ["Why is Venus always seen close to the Sun, as a morning or evening star?", "astronomy.md"],
  ["How do I keep my sourdough starter alive and get a crisp bread crust?", "baking.txt"],
  ["Tell me about Phobos", "astronomy.md"],
];

const setups: { name: string; env: (fake: FakeOpenAI) => Record<string, string> }[] = [
  { name: "the offline embedder and model", env: () => ({ LLM_PROVIDER: "local", EMBEDDINGS_PROVIDER: "local" }) },
  {
    name: "an OpenAI-compatible provider (fake server)",
    // The fake embeds a bag of words, stopwords included: "What is the capital of France?" scores
    // 0.37 against the sailing text, above its related questions' 0.31 to 0.46. No floor separates
    // them on that scale, so its floor is set above all of it (the setting, through the OpenAI
    // provider's path) and the words carry relevance; the real models' defaults are unit-tested.
    env: (fake) => ({ LLM_PROVIDER: "openai", EMBEDDINGS_PROVIDER: "openai", OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "test", LLM_MAX_RETRIES: "0", KNOWLEDGE_MIN_SIMILARITY: "0.5" }),
  },
];

type Exchange = { assistant_message: { content: string; citations: { filename: string; similarity: number }[] } };

describe.each(setups)("with $name", ({ name, env }) => {
  let fake: FakeOpenAI;
  let service: TestService;
  let alice: TestUser;
  let bob: TestUser;
  let personaId: string;
  let conversationId: string;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    service = await startTestService({ env: { ...env(fake), RATE_LIMIT_PER_MINUTE: "100000", AUTO_AVATARS: "false" } });
    [alice, bob] = await Promise.all([registerUser(service), registerUser(service)]);
    await service.services.db.knex("users").where({ id: alice.id }).update({ plan: "creator" });
    personaId = await insertPersona(service, alice);
    await Promise.all(Object.entries(CORPUS).map(([filename, text]) => ready(service, alice, personaId, filename, text)));
    conversationId = (await expectOk(service.clientFor(alice).POST("/v1/conversations", { body: { persona_id: personaId } }), 201)).id;
  }, 120_000);

  afterAll(async () => {
    await service?.close();
    await fake?.close();
  });

  const send = (content: string) =>
    expectOk(service.clientFor(alice).POST("/v1/conversations/{id}/messages", { params: { path: { id: conversationId } }, body: { content } }), 201) as Promise<Exchange>;

  /** The system turns of the last reply the fake model was asked for (the OpenAI setup). */
  const lastContext = () => {
    const calls = fake.requests.filter((r) => r.path === "/v1/chat/completions" && !JSON.stringify(r.body).includes("short title"));
    return (calls.at(-1)!.body as { messages: { role: string; content: string }[] }).messages;
  };

  it.each(SMALL_TALK)("finds nothing for small talk: %s", async (text) => {
    expect(await results(service, alice, personaId, text, 20)).toEqual([]);
  });

  it.each(UNRELATED)("finds nothing for an unrelated question: %s", async (text) => {
    expect(await results(service, alice, personaId, text, 20)).toEqual([]);
  });

  it.each(RELATED)("finds the document a related question is about: %s -> %s", async (text, filename) => {
    const found = await results(service, alice, personaId, text);
    expect(found.length).toBeGreaterThan(0);
    expect(found[0]!.filename).toBe(filename);
  });

  it("puts no excerpt into the reply to small talk or an unrelated question, and cites nothing", async () => {
    for (const text of ["Hello there", "What is the capital of France?"]) {
      const { assistant_message: reply } = await send(text);
      expect(reply.citations, text).toEqual([]);
      // The offline model quotes the first excerpt it is given: there is none to quote.
      for (const filename of Object.keys(CORPUS)) expect(reply.content).not.toContain(filename);
      if (name.startsWith("an OpenAI")) expect(JSON.stringify(lastContext())).not.toContain("knowledge base");
    }
  });

  it("puts the related document into the reply's context and cites it", async () => {
    const { assistant_message: reply } = await send("Why is Venus always seen close to the Sun, as a morning or evening star?");
    expect(reply.citations[0]!.filename).toBe("astronomy.md");
    expect(reply.citations[0]!.similarity).toBeGreaterThan(0);
    if (name.startsWith("an OpenAI")) expect(lastContext()[1]!.content).toContain("[source: astronomy.md#0]");
    else expect(reply.content).toContain("astronomy.md#0");
  });

  it("cites nothing in a streamed reply to small talk", async () => {
    const { events } = await readEvents(await sendStream(service, alice, conversationId, "Hey, thanks again!"));
    const done = JSON.parse(events.at(-1)!.data) as { citations: unknown[] };
    expect(events.at(-1)!.event).toBe("done");
    expect(done.citations).toEqual([]);
  });

  it("keeps another user out of the knowledge base", async () => {
    await expectApiError(query(service, bob, personaId, "Why is Venus close to the Sun?"), 404, "not_found");
  });
});

describe("KNOWLEDGE_MIN_SIMILARITY", () => {
  let service: TestService;
  let alice: TestUser;
  let personaId: string;

  beforeAll(async () => {
    // At 0 every chunk clears the vector side's floor again: the old behaviour, reachable by setting.
    service = await startTestService({ env: { LLM_PROVIDER: "local", EMBEDDINGS_PROVIDER: "local", KNOWLEDGE_MIN_SIMILARITY: "0", AUTO_AVATARS: "false" } });
    alice = await registerUser(service);
    await service.services.db.knex("users").where({ id: alice.id }).update({ plan: "creator" });
    personaId = await insertPersona(service, alice);
    await ready(service, alice, personaId, "astronomy.md", CORPUS["astronomy.md"]!);
  }, 120_000);

  afterAll(() => service?.close());

  it("sets the vector side's floor", async () => {
    const found = await results(service, alice, personaId, "What is the capital of France?");
    expect(found.map((r) => r.filename)).toEqual(["astronomy.md"]);
    expect(found[0]!.similarity).toBeLessThan(0.15);
  });
});
