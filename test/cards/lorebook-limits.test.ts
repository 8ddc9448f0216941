import { describe, expect, it } from "vitest";
import { createConversation, sendBlocking } from "../support/chat.ts";
import { useServiceWithFakeOpenAI } from "../support/fixtures.ts";
import type { Schemas } from "../../sdk/src/types.ts";
import { apiKeyFor } from "../support/users.ts";
import { uploadCard, v2Card } from "./helpers.ts";

// A lorebook at every limit of issue 31 H2 (entries, keys per entry, keys, key length, characters of
// keys), with a long history, through both ways a persona replies: the OpenAI-compatible endpoint
// and the native chat. Behaviour, not timing: the reply comes, with the entry its newest message
// names, and without the one named only in history older than the newest 65,536 characters.
// A model window of 32,768 tokens: a message of 30,000 characters is over the input limit of the
// default 8,192 (issue 34 item 6).
const fixture = useServiceWithFakeOpenAI({ AUTO_AVATARS: "false", CHAT_CONTEXT_TOKENS: "32768" });

type Sent = { messages: { role: string; content: string }[] };

// The documented limits (docs/adr/0161-lorebook-limits-refused-at-import.md, Character cards).
const LIMITS = { entries: 2_000, keysPerEntry: 100, keys: 10_000, keyLength: 100, keyCharacters: 100_000 };

const COMET = "The comet returns every 76 years.";
const NEBULA = "The nebula is a stellar nursery.";

/** 2,000 entries, the first 100 with 100 keys each: 10,000 keys of 100,000 characters, one of them 100 emoji long. */
function bookAtLimits() {
  const keyOf = (index: number) => {
    if (index === 0) return "🌌".repeat(LIMITS.keyLength);
    if (index === 500) return "comet-lore";
    if (index === 600) return "nebula-lor";
    // 90 keys of 9 characters and the rest of 10 make 100,000 characters with the 100 above.
    return `k${index}`.padEnd(index <= 90 ? 9 : 10, "~");
  };
  const perEntry = LIMITS.keysPerEntry;
  const entries = Array.from({ length: LIMITS.entries }, (_, i) => ({
    keys: i < LIMITS.keys / perEntry ? Array.from({ length: perEntry }, (_, k) => keyOf(i * perEntry + k)) : [],
    content: i === 5 ? COMET : i === 6 ? NEBULA : `Lore entry number ${i}.`,
    extensions: {},
    enabled: true,
    insertion_order: i,
  }));
  const keys = entries.flatMap((entry) => entry.keys);
  expect(keys.length).toBe(LIMITS.keys);
  expect(keys.reduce((sum, key) => sum + [...key].length, 0)).toBe(LIMITS.keyCharacters);
  return { name: "Sky atlas", scan_depth: 100, token_budget: 500, extensions: {}, entries };
}

async function importAtLimits() {
  const response = await uploadCard(fixture.service, fixture.alice, JSON.stringify(v2Card({ name: "Atlas", character_book: bookAtLimits() })), "atlas.json");
  const persona = await response.json();
  expect(response.status, JSON.stringify(persona)).toBe(201);
  return persona as { id: string };
}

const filler = (length: number) => "Stars drift over the quiet observatory. ".repeat(Math.ceil(length / 40)).slice(0, length);
// The oldest message names the nebula at its start; three messages of 30,000 characters later,
// that start is beyond the newest 65,536 characters.
const OLDEST = `Tell me of the nebula-lor again. ${filler(29_000)}`;
const LATER = [filler(30_000), filler(30_000)];
const NEWEST = "And what of the comet-lore?";

const systemTurnFor = (text: string) => {
  const call = fixture.fake.requests.find((request) => request.path === "/v1/chat/completions" && (request.body as Sent).messages.at(-1)?.content === text);
  expect(call, "the model was asked").toBeDefined();
  return (call!.body as Sent).messages[0]!;
};

describe("a lorebook at the limits, with a long history (issue 31 H2)", () => {
  it("replies through /openai/v1/chat/completions, scanning the newest characters only", async () => {
    fixture.fake.chat.always({ reply: "Noted." });
    const persona = await importAtLimits();
    const key = await apiKeyFor(fixture.service, fixture.alice, ["chat"]);
    const messages = [OLDEST, ...LATER].flatMap((content) => [
      { role: "user" as const, content },
      { role: "assistant" as const, content: "Noted." },
    ]);
    const { data: body, error, response } = await fixture.service.clientFor({ auth: { authorization: `Bearer ${key}` } }).POST("/openai/v1/chat/completions", {
      body: { model: persona.id, messages: [...messages, { role: "user", content: NEWEST }] },
    });
    expect(response.status, JSON.stringify(error ?? body)).toBe(200);
    // Not streamed: the JSON completion, not its event stream.
    expect((body as Schemas["OpenAIChatCompletion"]).choices[0]!.message.content).toBe("Noted.");
    const system = systemTurnFor(NEWEST);
    expect(system.role).toBe("system");
    expect(system.content).toContain(COMET);
    expect(system.content).not.toContain(NEBULA);
  });

  it("replies through the native chat, scanning the newest characters only", async () => {
    fixture.fake.chat.always({ reply: "Noted." });
    const persona = await importAtLimits();
    const conversation = await createConversation(fixture.service, fixture.alice, persona.id);
    for (const content of [OLDEST, ...LATER]) expect((await sendBlocking(fixture.service, fixture.alice, conversation.id, content)).status).toBe(201);
    // While it is among the newest characters, the nebula's entry is in.
    expect(systemTurnFor(OLDEST).content).toContain(NEBULA);
    const response = await sendBlocking(fixture.service, fixture.alice, conversation.id, NEWEST);
    expect(response.status, await response.clone().text()).toBe(201);
    const system = systemTurnFor(NEWEST);
    expect(system.content).toContain(COMET);
    expect(system.content).not.toContain(NEBULA);
  });
});
