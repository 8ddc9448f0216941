import { v7 as uuidv7 } from "uuid";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatModelProvider } from "../../server/toolkit/providers/llm/index.ts";
import type { ChatRequest } from "../../server/toolkit/providers/llm/types.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { call, makePersona } from "../social/helpers.ts";

// Studio test chat: a reply with any version's instructions through the reply engine, nothing
// stored, one message of the monthly quota; limits and other users.
let service: TestService;
const clock = new Date("2026-11-21T10:00:00.000Z");
const seen: ChatRequest[] = [];
const model: ChatModelProvider = {
  name: "fake",
  complete: async (request) => {
    seen.push(request);
    return { content: "Rust, cadet!", model: "fake-model-1", usage: { inputTokens: 61, outputTokens: 48 } };
  },
  // eslint-disable-next-line require-yield
  stream: async function* () {
    throw new Error("not used");
  },
};
let owner: TestUser;
let stranger: TestUser;
const systemOf = (request: ChatRequest) => request.messages.find((turn) => turn.role === "system")?.content ?? "";
const count = async (table: string, where: Record<string, string>) => Number((await service.services.db.knex(table).where(where).count({ n: "*" }).first())?.n);
const usedMessages = async (user: TestUser) => Number((await service.services.db.knex("usage_counters").where({ user_id: user.id }).sum({ n: "messages_sent" }).first())?.n ?? 0);

beforeAll(async () => {
  service = await startTestService({ now: () => clock, providers: { llm: model }, env: { RATE_LIMIT_PER_MINUTE: "100000", AUTO_AVATARS: "false" } });
  owner = await registerUser(service);
  stranger = await registerUser(service);
});

afterAll(async () => {
  await service?.close();
});

describe("test chat", () => {
  it("answers with the active version by default and with any version when asked; stores nothing", async () => {
    const persona = await makePersona(service, owner, "Nova", { instructions: "You are the active Nova." });
    const draft = await call(service, owner, "POST", `/v1/studio/${persona.id}/versions`, 201, { instructions: "You are the draft Nova." });
    const active = (await call(service, owner, "GET", `/v1/studio/${persona.id}/versions`, 200)).data[1];
    const before = await usedMessages(owner);

    const byDefault = await call(service, owner, "POST", `/v1/studio/${persona.id}/test-chat`, 200, { message: "Why is Mars red?" });
    expect(byDefault).toMatchObject({
      persona_id: persona.id,
      version_id: active.id,
      input: "Why is Mars red?",
      output: "Rust, cadet!",
      model: "fake-model-1",
      tokens: { input: 61, output: 48 },
      created_at: clock.toISOString(),
    });
    expect(byDefault.latency_ms).toEqual(expect.any(Number));
    expect(systemOf(seen.at(-1)!)).toContain("You are the active Nova.");

    const withDraft = await call(service, owner, "POST", `/v1/studio/${persona.id}/test-chat`, 200, { message: "And Venus?", version_id: draft.id });
    expect(withDraft.version_id).toBe(draft.id);
    expect(systemOf(seen.at(-1)!)).toContain("You are the draft Nova.");
    expect(seen.at(-1)!.messages.at(-1)).toMatchObject({ role: "user", content: "And Venus?" });
    // As a new conversation's first reply: after the persona's greeting, and nothing else.
    expect(seen.at(-1)!.messages.slice(1)).toEqual([{ role: "assistant", content: "Hi." }, { role: "user", content: "And Venus?" }]);

    expect(await count("conversations", { persona_id: persona.id })).toBe(0);
    expect(await count("messages", { persona_id: persona.id })).toBe(0);
    expect(await usedMessages(owner)).toBe(before + 2);
    expect((await call(service, owner, "GET", `/v1/personas/${persona.id}`, 200)).message_count).toBe(0);
  });

  it("uses the persona's own instructions, with version_id null, when it has no active version", async () => {
    const persona = await makePersona(service, owner, "Bare", { instructions: "You are bare." });
    await service.services.db.knex("instruction_versions").where({ persona_id: persona.id }).delete();
    const result = await call(service, owner, "POST", `/v1/studio/${persona.id}/test-chat`, 200, { message: "Hi" });
    expect(result.version_id).toBeNull();
    expect(systemOf(seen.at(-1)!)).toContain("You are bare.");
  });

  it("is 402 once the monthly messages are used up", async () => {
    const user = await registerUser(service);
    const persona = await makePersona(service, user, "Quota");
    const period = `${clock.toISOString().slice(0, 7)}-01`;
    await service.services.db.knex("usage_counters").insert({ user_id: user.id, period_start: period, messages_sent: 200 });
    await call(service, user, "POST", `/v1/studio/${persona.id}/test-chat`, 402, { message: "Hi" });
  });

  it("refuses bad input, unknown versions and another user's persona", async () => {
    const persona = await makePersona(service, owner, "Guarded", { is_public: true });
    const calls = seen.length;
    // A malformed version id fails the contract (every id is a UUID).
    for (const body of [{}, { message: "" }, { message: "x".repeat(32001) }, { message: 5 }, { message: "Hi", version_id: "v1" }]) {
      await call(service, owner, "POST", `/v1/studio/${persona.id}/test-chat`, 400, body);
    }
    await call(service, owner, "POST", `/v1/studio/${persona.id}/test-chat`, 404, { message: "Hi", version_id: uuidv7() });
    await call(service, stranger, "POST", `/v1/studio/${persona.id}/test-chat`, 404, { message: "Hi" });
    const strangers = await makePersona(service, stranger, "Theirs");
    const theirVersion = (await call(service, stranger, "GET", `/v1/studio/${strangers.id}/versions`, 200)).data[0].id;
    await call(service, owner, "POST", `/v1/studio/${persona.id}/test-chat`, 404, { message: "Hi", version_id: theirVersion });
    expect(seen.length).toBe(calls);
  });
});
