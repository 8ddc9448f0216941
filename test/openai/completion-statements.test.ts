import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createConversation, createPersona } from "../support/chat.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { settled, uploaded } from "../knowledge/helpers.ts";
import { expectOpenAIError, fakeUpstreamEnv } from "../support/openai-door.ts";
import { statementsNaming } from "../support/pg-queries.ts";
import { sendRaw } from "../support/raw.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";
import { eventually } from "../support/wait.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// Issue 37: a streamed stateless completion through the OpenAI-compatible door costs two
// statements: one finds the persona by its model name and, only when it is found, reserves the
// message with its lease and reads the persona's knowledge flag and card; the other ends the lease
// once the reply is done. The refusals that need the persona come after the reservation and give
// it back; a 402 and a 404 come out as they did when the reply engine reserved.
let fake: FakeOpenAI;
let service: TestService;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  service = await startTestService({ env: { ...fakeUpstreamEnv(fake), EMBEDDINGS_PROVIDER: "openai" } });
  [alice, bob] = await Promise.all([registerUser(service), registerUser(service)]);
});

beforeEach(() => fake.reset());

afterAll(async () => {
  await service?.close();
  await fake?.close();
});

let stopWatching: (() => void) | undefined;
afterEach(() => {
  stopWatching?.();
  stopWatching = undefined;
});

const knex = () => service.services.db.knex;
const used = async (user: TestUser) => Number((await knex()("usage_counters").where({ user_id: user.id }).sum({ n: "messages_sent" }).first())?.n ?? 0);
const leases = async (user: TestUser) => Number((await knex()("quota_leases").where({ user_id: user.id }).count({ n: "*" }).first())?.n ?? 0);
const chatCalls = () => fake.requests.filter((request) => request.path === "/v1/chat/completions");
/** The statements naming `ids`, or ids they carried (the lease's end names the lease alone): see statementsNaming. */
function watched(ids: string[]): string[] {
  const watch = statementsNaming(ids, { followIds: true });
  stopWatching = watch.stop;
  return watch.texts;
}

/** A streamed completion, read to its end; answers the text of its deltas and its last data line. */
async function streamed(user: TestUser, model: string, content: string) {
  const { data, response } = await service.clientFor(user).POST("/openai/v1/chat/completions", {
    body: { model, stream: true, messages: [{ role: "user", content }] },
    parseAs: "text",
  });
  const text = typeof data === "string" ? data : "";
  expect(response.status, text).toBe(200);
  const lines = text.split("\n").filter((line) => line.startsWith("data: ")).map((line) => line.slice(6));
  const chunks = lines.slice(0, -1).map((line) => JSON.parse(line) as { choices: { delta: { content?: string } }[] });
  return { text: chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "").join(""), last: lines.at(-1) };
}

/** A request the door refuses, streamed or not; the body may be one the contract does not type. */
const postRaw = (user: TestUser, body: Record<string, unknown>) => sendRaw(service, "POST", "/openai/v1/chat/completions", { body, headers: user.auth });

describe(`a streamed stateless completion's statements (${databaseKind})`, () => {
  it("are two: the persona with the reservation, its knowledge flag and card; then the lease's end", async () => {
    const persona = await createPersona(service, alice, { name: "Quiet Ledger", instructions: "You keep accounts." });
    // The first request warms what the process keeps (the credential cache; the prepared statement on PostgreSQL).
    expect((await streamed(alice, "quiet-ledger", "warm up")).last).toBe("[DONE]");
    await eventually(async () => (await leases(alice)) === 0);
    const before = await used(alice);

    const seen = watched([alice.id, persona.id]);
    fake.chat.next({ chunks: ["two ", "statements"] });
    const { text, last } = await streamed(alice, "quiet-ledger", "How many?");
    expect(text).toBe("two statements");
    expect(last).toBe("[DONE]");
    // The lease ends once the reply is done, after the stream's last event may have left.
    await eventually(async () => seen.some((statement) => statement.startsWith('delete from "quota_leases"')));
    stopWatching?.();

    expect(seen, seen.join("\n")).toHaveLength(2);
    expect(seen[0]).toMatch(/^WITH p AS \(SELECT chosen\.\* FROM \(select "p"\.\* from "personas" as "p"/);
    for (const part of ["INSERT INTO usage_counters", "INSERT INTO quota_leases", "FROM knowledge_chunks", "FROM persona_cards"]) expect(seen[0]).toContain(part);
    expect(seen[1]).toMatch(/^delete from "quota_leases" where "reply_id" = /);
    expect(await used(alice)).toBe(before + 1);
    // Seen when it was sent: it may still be on its way.
    await eventually(async () => (await leases(alice)) === 0);
  });

  it("finds the persona by id, by own handle and by <username>/<handle>, each answered and counted once", async () => {
    const own = await createPersona(service, alice, { name: "Named Thrice", instructions: "You answer." });
    const shared = await createPersona(service, bob, { name: "Bob Shared", instructions: "You are Bob.", is_public: true });
    for (const model of [own.id, "named-thrice", `${bob.username}/bob-shared`, shared.id]) {
      const before = await used(alice);
      fake.chat.next({ chunks: [`as ${model}`] });
      expect((await streamed(alice, model, "hello")).text).toBe(`as ${model}`);
      expect(await used(alice)).toBe(before + 1);
    }
    await eventually(async () => (await leases(alice)) === 0);
  });

  it("reads the persona's knowledge only when it has some, and puts it into the context", async () => {
    const carol = await registerUser(service);
    const persona = await createPersona(service, carol, { name: "Ring Expert", instructions: "You know planets." });
    const rings = "Saturn's rings are made mostly of water ice, with some rock and dust.";
    const document = await uploaded(service, carol, persona.id, "saturn.md", rings);
    expect((await settled(service, carol, persona.id, document.id)).status).toBe("ready");
    fake.reset();
    await streamed(carol, "ring-expert", "What are Saturn's rings made of?");
    const sent = chatCalls().at(-1)!.body as { messages: { role: string; content: string }[] };
    expect(sent.messages.map((message) => message.content).join("\n")).toContain(`[source: saturn.md#0]\n${rings}`);
  });
});

describe("refusals after the persona is found", () => {
  let frank: TestUser;
  let strict: { id: string };
  let other: { id: string };
  beforeAll(async () => {
    frank = await registerUser(service);
    strict = await createPersona(service, frank, {
      name: "Strict Keeper",
      allow_client_system_messages: false,
      model_settings: { client_may_set: ["max_tokens"] },
    });
    other = await createPersona(service, frank, { name: "Other Keeper" });
  });

  const ask = (content = "x") => [{ role: "user", content }];
  const someoneElsesConversation = async () => {
    const owner = await registerUser(service);
    return (await createConversation(service, owner, (await createPersona(service, owner)).id)).id;
  };
  const cases: [string, () => Promise<Record<string, unknown>>, number, string, string][] = [
    ["a client system message the owner forbids", async () => ({ messages: [{ role: "system", content: "Be a pirate." }, ...ask()] }), 400, "system_messages_not_allowed", "messages"],
    ["a parameter the owner keeps", async () => ({ temperature: 0.2, messages: ask() }), 400, "parameter_not_allowed", "temperature"],
    [
      "a conversation with an exchange that ends after the input",
      async () => ({ conversation_id: (await createConversation(service, frank, strict.id)).id, messages: [...ask(), { role: "assistant", content: "Arr" }] }),
      400,
      "unsupported",
      "conversation_id",
    ],
    ["another user's conversation", async () => ({ conversation_id: await someoneElsesConversation(), messages: ask() }), 404, "conversation_not_found", "conversation_id"],
    ["a conversation with another persona", async () => ({ conversation_id: (await createConversation(service, frank, other.id)).id, messages: ask() }), 404, "conversation_not_found", "conversation_id"],
  ];
  for (const [what, bodyOf, status, code, param] of cases) {
    it(`${what}: ${status} ${code}, the message given back and no lease left`, async () => {
      const body = await bodyOf();
      for (const stream of [true, false]) {
        const before = await used(frank);
        await expectOpenAIError(await postRaw(frank, { model: strict.id, stream, ...body }), status, code, param);
        expect(await used(frank)).toBe(before);
        expect(await leases(frank)).toBe(0);
      }
      expect(chatCalls()).toHaveLength(0);
    });
  }
});

describe("a used-up quota and an unknown model", () => {
  const period = () => new Date().toISOString().slice(0, 8) + "01";

  it("answer the quota's 429 insufficient_quota as before, after the request's own refusals, reserving nothing", async () => {
    const dave = await registerUser(service);
    const own = await createPersona(service, dave, { name: "Dave's Own", allow_client_system_messages: false });
    await knex()("usage_counters").insert({ user_id: dave.id, period_start: period(), messages_sent: 200 });
    for (const stream of [true, false]) {
      const answer = await postRaw(dave, { model: own.id, stream, messages: [{ role: "user", content: "x" }] });
      expect(answer.headers.get("x-should-retry")).toBe("false");
      const error = await expectOpenAIError(answer, 429, "insufficient_quota", null);
      expect(error).toEqual({ message: "The free plan allows 200 messages this period; upgrade the plan for more", type: "insufficient_quota", param: null, code: "insufficient_quota" });
    }
    // A refusal of the request itself comes first, as it did before the reservation moved.
    await expectOpenAIError(await postRaw(dave, { model: own.id, messages: [{ role: "system", content: "Be a pirate." }, { role: "user", content: "x" }] }), 400, "system_messages_not_allowed", "messages");
    await expectOpenAIError(await postRaw(dave, { model: "nobody", messages: [{ role: "user", content: "x" }] }), 404, "model_not_found", "model");
    expect(await used(dave)).toBe(200);
    expect(await leases(dave)).toBe(0);
    expect(chatCalls()).toHaveLength(0);
  });

  it("is 404 model_not_found in one statement that reserves nothing", async () => {
    const erin = await registerUser(service);
    const hidden = await createPersona(service, bob, { name: "Bob Hidden" });
    // The session is looked up once and then kept by the credential cache: not a statement of these requests.
    expect((await service.clientFor(erin).GET("/openai/v1/models")).response.status).toBe(200);
    for (const model of ["gpt-4o", hidden.id, `${bob.username}/bob-hidden`, "not/a/persona"]) {
      const seen = watched([erin.id]);
      await expectOpenAIError(await postRaw(erin, { model, stream: true, messages: [{ role: "user", content: "x" }] }), 404, "model_not_found", "model");
      stopWatching?.();
      expect(seen, seen.join("\n")).toHaveLength(1);
      expect(seen[0]).toMatch(/^WITH p AS/);
    }
    // No counter row was even started for the period.
    expect(await knex()("usage_counters").where({ user_id: erin.id }).first()).toBeUndefined();
    expect(await leases(erin)).toBe(0);
    expect(chatCalls()).toHaveLength(0);
  });
});
