import "./installed.ts";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parseSse } from "../support/sse.ts";
import { openDoor, PERSONA_INSTRUCTIONS, type Door } from "./door.ts";
import {
  DEFAULT_SETTINGS,
  sillyTavernBody,
  sillyTavernGenerate,
  sillyTavernMessages,
  sillyTavernModels,
  type ChatMessage,
  type GenerationType,
  type SillyTavernSettings,
} from "./sillytavern.ts";

// SillyTavern 1.12.6 with the door as a "Custom (OpenAI-compatible)" chat completion source, its
// requests rebuilt from its source: tag 1.12.6, commit 648e70b8c6ae10052c2e28d164390ff50846777a,
// src/endpoints/backends/chat-completions.js (POST /status and /generate: the upstream body, the
// headers, node-fetch 2 without an agent) and public/scripts/openai.js (sendOpenAIRequest, the
// prompt order, Continue and Impersonate); see ./sillytavern.ts. Its server makes every upstream
// call with node-fetch 2.6.12 (its package-lock.json), which asks for `Connection: close` while
// Node's global agent keeps sockets alive: when an answer says `Connection: keep-alive` anyway (the
// door's streams did), the next request, a Regenerate or a swipe, goes on the same socket after a
// close the server took at its word, and was refused as malformed (issue 35).
let door: Door;
let customUrl: string;

beforeAll(async () => {
  door = await openDoor();
  customUrl = door.baseURL;
});
beforeEach(() => door.fake.reset());
afterAll(() => door?.close());

const character = {
  name: "Captain Nova",
  description: "Captain Nova is a retired starship captain who teaches cadets to read the night sky.",
  personality: "warm, precise, fond of old star charts",
  scenario: "The observation deck of a training ship, at night.",
  first_mes: "Welcome aboard, cadet!",
};
const chat: ChatMessage[] = [
  { role: "assistant", content: character.first_mes },
  { role: "user", content: "Which planet is the bright one?" },
];
const settings = (overrides: Partial<SillyTavernSettings> = {}): SillyTavernSettings => ({ ...DEFAULT_SETTINGS, custom_model: "nova", ...overrides });

/** One generation as SillyTavern runs it; a streamed one is read to its end as its browser does. */
async function generate(type: GenerationType, options: { settings?: SillyTavernSettings; history?: ChatMessage[]; continuePrefill?: boolean } = {}) {
  const used = options.settings ?? settings();
  const messages = sillyTavernMessages(character, "User", options.history ?? chat, type, options);
  const response = await sillyTavernGenerate(customUrl, door.key, sillyTavernBody(used, messages, type));
  const text = await response.text();
  if (response.status !== 200) return { status: response.status, text: "", error: text };
  if (!used.stream_openai) return { status: 200, text: (JSON.parse(text) as { choices: { message: { content: string } }[] }).choices[0]!.message.content, error: "" };
  // SillyTavern's browser reads `data:` events up to [DONE], adding each delta's content.
  let reply = "";
  for (const { data } of parseSse(text).events) {
    if (data === "[DONE]") break;
    reply += (JSON.parse(data) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content ?? "";
  }
  return { status: 200, text: reply, error: "" };
}

describe("SillyTavern 1.12.6 against the door", () => {
  it("connects: its status check lists the personas by handle", async () => {
    const response = await sillyTavernModels(customUrl, door.key);
    expect(response.status).toBe(200);
    const list = (await response.json()) as { data: { id: string }[] };
    expect(list.data.map((model) => model.id)).toEqual(["nova"]);
  });

  it("generates blocking with its default sliders, which reach the model", async () => {
    door.fake.chat.next({ reply: "That is Venus, cadet." });
    const answer = await generate("normal", { settings: settings({ stream_openai: false }) });
    expect(answer).toEqual({ status: 200, text: "That is Venus, cadet.", error: "" });
    expect(door.lastUpstream()).toMatchObject({ temperature: 1, top_p: 1, presence_penalty: 0, frequency_penalty: 0, max_tokens: 300 });
    // Its own system prompts follow the persona's instructions; the chat is the card's greeting and the user's line.
    const sent = door.lastUpstream().messages;
    expect(sent[0]).toEqual({ role: "system", content: PERSONA_INSTRUCTIONS });
    expect(sent.slice(-2)).toEqual(chat);
  });

  it("streams a reply", async () => {
    door.fake.chat.next({ chunks: ["That is ", "Venus, ", "cadet."] });
    expect(await generate("normal")).toEqual({ status: 200, text: "That is Venus, cadet.", error: "" });
  });

  it("sends its requests as SillyTavern does: node-fetch asks for Connection: close on Node's kept-alive global agent", async () => {
    // The condition the next test needs, held here so that a newer node-fetch (2.7 sends no
    // Connection header) or an older Node (no keep-alive global agent) cannot make it pass idly.
    expect((http.globalAgent as http.Agent & { keepAlive: boolean }).keepAlive).toBe(true);
    const seen: (string | undefined)[] = [];
    const echo = http.createServer((request, response) => {
      seen.push(request.headers.connection);
      response.end("{}");
    });
    await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = echo.address() as AddressInfo;
      await (await sillyTavernGenerate(`http://127.0.0.1:${port}`, door.key, {})).text();
      expect(seen).toEqual(["close"]);
    } finally {
      echo.closeAllConnections();
      await new Promise((resolve) => echo.close(resolve));
    }
  });

  it("regenerates and swipes right after a streamed reply", async () => {
    door.fake.chat.always({ chunks: ["Venus, ", "cadet."] });
    const answers = [];
    for (const type of ["normal", "regenerate", "swipe", "swipe"] as const) answers.push(await generate(type));
    answers.push(await generate("swipe", { settings: settings({ stream_openai: false }) }));
    answers.push(await generate("swipe"));
    expect(answers).toEqual(Array(6).fill({ status: 200, text: "Venus, cadet.", error: "" }));
    expect(door.upstream()).toHaveLength(6);
  });

  it("passes its stop strings, seed and logit bias preset to the model", async () => {
    await generate("normal", { settings: settings({ stop: ["\nUser:", "###"], seed: 1234, logit_bias: { "50256": -50 }, temp_openai: 0.7, top_p_openai: 0.9, freq_pen_openai: 0.2, pres_pen_openai: 0.1, openai_max_tokens: 120 }) });
    expect(door.lastUpstream()).toMatchObject({ stop: ["\nUser:", "###"], seed: 1234, logit_bias: { "50256": -50 }, temperature: 0.7, top_p: 0.9, frequency_penalty: 0.2, presence_penalty: 0.1, max_tokens: 120 });
  });

  it("continues a message with the continue nudge last, and with Continue prefill as an assistant prefill", async () => {
    const history: ChatMessage[] = [...chat, { role: "assistant", content: "That is Venus, the" }];
    door.fake.chat.next({ reply: "brightest planet." });
    expect(await generate("continue", { history })).toMatchObject({ status: 200, text: "brightest planet." });
    expect(door.lastUpstream().messages.at(-1)).toMatchObject({ role: "system", content: expect.stringContaining("[Continue the following message.") });
    door.fake.chat.next({ reply: " brightest planet." });
    expect(await generate("continue", { history, continuePrefill: true })).toMatchObject({ status: 200, text: " brightest planet." });
    expect(door.lastUpstream().messages.at(-1)).toEqual({ role: "assistant", content: "That is Venus, the" });
  });

  it("impersonates the user with the impersonation prompt last", async () => {
    door.fake.chat.next({ reply: "And the red one, Captain?" });
    const history: ChatMessage[] = [...chat, { role: "assistant", content: "That is Venus, cadet." }];
    expect(await generate("impersonate", { history, settings: settings({ stream_openai: false }) })).toMatchObject({ status: 200, text: "And the red one, Captain?" });
    expect(door.lastUpstream().messages.at(-1)).toMatchObject({ role: "system", content: expect.stringContaining("[Write your next reply from the point of view of User") });
  });

  it("shows the door's message for an unknown model, blocking and streamed", async () => {
    for (const stream_openai of [false, true]) {
      const answer = await generate("normal", { settings: settings({ custom_model: "no-such-persona", stream_openai }) });
      expect(answer.status).toBe(404);
      expect(JSON.parse(answer.error)).toMatchObject({ error: { message: expect.stringMatching(/does not exist/), code: "model_not_found" } });
    }
  });

  describe("settings the door refuses, with a message SillyTavern shows", () => {
    const refusals: [string, Partial<SillyTavernSettings>, string, string][] = [
      ["Multiple swipes per generation (n 2)", { n: 2 }, "unsupported", "n"],
      ["Request token probabilities (logprobs, top_logprobs)", { request_token_probabilities: true }, "unsupported", "logprobs"],
      ["top_k through Include Body Parameters", { custom_include_body: { top_k: 40 } }, "unknown_parameter", "top_k"],
      ["min_p through Include Body Parameters", { custom_include_body: { min_p: 0.05 } }, "unknown_parameter", "min_p"],
      ["repetition_penalty through Include Body Parameters", { custom_include_body: { repetition_penalty: 1.1 } }, "unknown_parameter", "repetition_penalty"],
    ];
    it.each(refusals)("%s", async (_what, overrides, code, param) => {
      const answer = await generate("normal", { settings: settings({ stream_openai: false, ...overrides }) });
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.error)).toMatchObject({ error: { message: expect.any(String), code, param } });
      expect(door.upstream()).toHaveLength(0);
    });
  });
});
