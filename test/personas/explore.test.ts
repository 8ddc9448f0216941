import { v7 as uuidv7 } from "uuid";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatModelProvider } from "../../server/toolkit/providers/llm/index.ts";
import type { operations } from "../../generated/openapi.d.ts";
import type { RequestBody } from "../../sdk/src/types.ts";
import { refreshTrending } from "../../server/areas/personas/trending.ts";
import { expectError, expectOk } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// The explore feed: public personas of every creator, filtered by category and free text, in the
// three orders of docs/adr/0101-explore-public-personas-full-text-and-name-search-three.md, paged stably. Every persona here is made in beforeAll.
let service: TestService;
const NOW = new Date("2026-11-21T10:00:00.000Z");
// Tokens issued at the start must still be valid at NOW (they live an hour).
let clock = new Date(NOW.getTime() - 10 * 60 * 1000);
let ann: TestUser;
let ben: TestUser;
let viewer: TestUser;

const DAY_MS = 24 * 60 * 60 * 1000;
const EXPLORE = "/v1/personas/explore";

const greeter: ChatModelProvider = {
  name: "fake",
  complete: async (request) => ({ content: "Hello there.", model: request.model, usage: { inputTokens: 1, outputTokens: 1 } }),
  // eslint-disable-next-line require-yield
  stream: async function* () {
    throw new Error("not used");
  },
};

interface Made {
  id: string;
  name: string;
  creator_id: string;
}

/** name -> persona, in creation order (each one a minute after the previous). */
const made = new Map<string, Made>();

async function create(user: TestUser, name: string, fields: Partial<RequestBody<"personas_create">>, messageCount: number): Promise<Made> {
  clock = new Date(clock.getTime() + 60_000);
  const body = await expectOk(service.clientFor(user).POST("/v1/personas", { body: { name, instructions: `You are ${name}.`, greeting_message: "Hi.", ...fields } }), 201);
  // The conversations area keeps message_count; here it is set as if it had.
  await service.services.db.knex("personas").where({ id: body.id }).update({ message_count: messageCount });
  made.set(name, body);
  return body;
}

/** Messages written straight to the database, `age` before NOW each, for the trending order. */
async function messagesFor(persona: Made, ages: number[]): Promise<void> {
  const { knex } = service.services.db;
  const conversationId = uuidv7();
  await knex("conversations").insert({ id: conversationId, user_id: viewer.id, persona_id: persona.id, title: null, message_count: ages.length, created_at: NOW, updated_at: NOW });
  for (const age of ages) {
    await knex("messages").insert({
      id: uuidv7(),
      conversation_id: conversationId,
      user_id: viewer.id,
      persona_id: persona.id,
      role: "user",
      content: "Hello",
      created_at: new Date(NOW.getTime() - age),
    });
  }
}

async function explore(query: NonNullable<operations["personas_explore"]["parameters"]["query"]> = {}, user: TestUser = viewer) {
  return expectOk(service.clientFor(user).GET("/v1/personas/explore", { params: { query } }));
}

const names = (body: { data: Made[] }) => body.data.map((row) => row.name);

beforeAll(async () => {
  service = await startTestService({ now: () => clock, providers: { llm: greeter }, env: { RATE_LIMIT_PER_MINUTE: "100000", AUTO_AVATARS: "false" } });
  [ann, ben, viewer] = [await registerUser(service), await registerUser(service), await registerUser(service)];
  for (const user of [ann, ben]) await service.services.db.knex("users").where({ id: user.id }).update({ plan: "creator" });

  const nova = await create(ann, "Captain Nova", {
    is_public: true,
    category: "tutor",
    description: "A retired starship captain who explains astronomy with stories from the bridge.",
  }, 42);
  await create(ann, "Secret Nova", { description: "Astronomy notes nobody else may read." }, 500);
  const remy = await create(ben, "Chef Remy", { is_public: true, category: "creative", description: "Cooks French food with you." }, 10);
  await create(ben, "100% Focus", { is_public: true, category: "coach", description: "Deep work sessions." }, 5);
  await create(ben, "1000 Focus", { is_public: true, category: "coach", description: "Many small habits." }, 5);
  await create(ben, "Quiz_Master", { is_public: true, category: "tutor", description: "Trivia night." }, 0);
  await create(ben, "Quiz Master", { is_public: true, category: "tutor", description: "Pub questions." }, 0);
  await create(viewer, "Viewer Own", { is_public: true, category: "companion" }, 0);
  clock = NOW;

  // Remy: 3 messages in the last 7 days (one exactly 7 days old). Nova: 1 recent and 20 older.
  await messagesFor(remy, [60_000, DAY_MS, 7 * DAY_MS]);
  await messagesFor(nova, [2 * DAY_MS, ...Array.from({ length: 20 }, () => 7 * DAY_MS + 1)]);
  // Trending sorts read the scores the periodic refresh stores.
  await refreshTrending(service.services);
});

afterAll(async () => {
  await service?.close();
});

const PUBLIC = ["Captain Nova", "Chef Remy", "100% Focus", "1000 Focus", "Quiz_Master", "Quiz Master", "Viewer Own"];

describe("explore", () => {
  it("lists public personas of every creator, the caller's own included, with exactly the explore fields", async () => {
    const body = await explore();
    expect(body).toMatchObject({ total: PUBLIC.length, limit: 20, offset: 0 });
    expect(names(body).sort()).toEqual([...PUBLIC].sort());
    const nova = body.data.find((row) => row.name === "Captain Nova")!;
    expect(nova).toEqual({
      id: made.get("Captain Nova")!.id,
      name: "Captain Nova",
      description: "A retired starship captain who explains astronomy with stories from the bridge.",
      model: service.services.config.llm.model,
      avatar_url: null,
      is_public: true,
      category: "tutor",
      message_count: 42,
      creator_id: ann.id,
      content_rating: "general",
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
  });

  it("sorts by popular by default: message_count, then newest first", async () => {
    const expected = ["Captain Nova", "Chef Remy", "1000 Focus", "100% Focus", "Viewer Own", "Quiz Master", "Quiz_Master"];
    expect(names(await explore())).toEqual(expected);
    expect(names(await explore({ sort: "popular" }))).toEqual(expected);
  });

  it("sorts by recent: newest first", async () => {
    expect(names(await explore({ sort: "recent" }))).toEqual([...PUBLIC].reverse());
  });

  it("sorts by trending: messages of the last 7 days, then message_count, then newest first", async () => {
    const expected = ["Chef Remy", "Captain Nova", "1000 Focus", "100% Focus", "Viewer Own", "Quiz Master", "Quiz_Master"];
    expect(names(await explore({ sort: "trending" }))).toEqual(expected);
  });

  it("filters by category, alone and with the other parameters", async () => {
    expect(names(await explore({ category: "coach" }))).toEqual(["1000 Focus", "100% Focus"]);
    expect(names(await explore({ category: "tutor", sort: "recent" }))).toEqual(["Quiz Master", "Quiz_Master", "Captain Nova"]);
    expect(await explore({ category: "assistant" })).toEqual({ data: [], total: 0, limit: 20, offset: 0 });
    expect(names(await explore({ category: "tutor", q: "quiz", sort: "trending" }))).toEqual(["Quiz Master", "Quiz_Master"]);
  });

  it("matches q with full text over name and description: stemmed, any case, web-search syntax", async () => {
    expect(names(await explore({ q: "astronomy" }))).toEqual(["Captain Nova"]);
    expect(names(await explore({ q: "STORY" }))).toEqual(["Captain Nova"]);
    expect(names(await explore({ q: "cooking french" }))).toEqual(["Chef Remy"]);
    expect(names(await explore({ q: '"starship captain"' }))).toEqual(["Captain Nova"]);
    expect(names(await explore({ q: '"captain starship"' }))).toEqual([]);
    expect(names(await explore({ q: "quiz -trivia" }))).toEqual(["Quiz Master"]);
  });

  it("matches q as a case-insensitive substring of the name", async () => {
    expect(names(await explore({ q: "emy" }))).toEqual(["Chef Remy"]);
    expect(names(await explore({ q: "aPTAIN n" }))).toEqual(["Captain Nova"]);
  });

  it("takes % and _ in q literally", async () => {
    expect(names(await explore({ q: "%" }))).toEqual(["100% Focus"]);
    expect(names(await explore({ q: "100%" }))).toEqual(["100% Focus"]);
    expect(names(await explore({ q: "_" }))).toEqual(["Quiz_Master"]);
    expect(names(await explore({ q: "z_M" }))).toEqual(["Quiz_Master"]);
    expect(names(await explore({ q: "\\" }))).toEqual([]);
  });

  it("never shows a private persona, whatever matches it", async () => {
    expect(names(await explore({ q: "secret" }))).toEqual([]);
    expect(names(await explore({ q: "notes" }, ann))).toEqual([]);
    expect((await explore({ limit: 100 }, ann)).data.map((row) => row.name)).not.toContain("Secret Nova");
  });

  it("treats a q of only spaces as no filter", async () => {
    expect((await explore({ q: "  " })).total).toBe(PUBLIC.length);
  });

  it("pages without repeating or skipping in every order, with the total on each page", async () => {
    for (const sort of ["popular", "recent", "trending"] as const) {
      const all = (await explore({ sort, limit: 100 })).data.map((row) => row.id);
      const paged: string[] = [];
      for (let offset = 0; offset < PUBLIC.length; offset += 3) {
        const page = await explore({ sort, limit: 3, offset });
        expect(page).toMatchObject({ total: PUBLIC.length, limit: 3, offset });
        paged.push(...page.data.map((row) => row.id));
      }
      expect(paged).toEqual(all);
    }
    expect(await explore({ offset: 100 })).toEqual({ data: [], total: PUBLIC.length, limit: 20, offset: 100 });
  });

  it("refuses bad parameters with 400", async () => {
    for (const query of [
      "?limit=0", "?limit=101", "?offset=-1", "?sort=created_at", "?category=wizard", "?q=", `?q=${"q".repeat(201)}`, "?tag=x",
    ]) {
      await expectError(await service.fetch(`${EXPLORE}${query}`, { headers: viewer.auth }), 400, "invalid_request");
    }
    expect((await explore({ q: "q".repeat(200) })).data).toEqual([]);
  });
});
