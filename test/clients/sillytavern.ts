import fetch, { type RequestInit, type Response } from "node-fetch";

// What SillyTavern 1.12.6 sends to a "Custom (OpenAI-compatible)" chat completion source, rebuilt
// from its source (tag 1.12.6, commit 648e70b8c6ae10052c2e28d164390ff50846777a):
// - public/scripts/openai.js, sendOpenAIRequest: the browser's `generate_data` (the sliders, stop
//   strings, seed, `n`, logprobs, the Custom fields) posted to SillyTavern's own server;
//   populateChatHistory and preparePromptsForChatCompletion: the default prompt order, Continue
//   (a closing nudge, or the message itself as a prefill with "Continue prefill"), Impersonate
//   (a closing system prompt);
// - src/endpoints/backends/chat-completions.js, POST /generate: the upstream `requestBody` and the
//   node-fetch call; POST /status: GET `{custom_url}/models`. No agent is passed, so Node's global
//   agent carries the requests, and it keeps sockets alive since Node 19, while node-fetch 2.6.12
//   (the version of SillyTavern's package-lock.json; 2.7 no longer does) asks for
//   `Connection: close` on every request sent without an agent. An answer that says
//   `Connection: keep-alive` anyway gets the next request on the same socket.

/** The settings of SillyTavern's Chat Completion panel that reach the request (its defaults, `oai_settings`). */
export interface SillyTavernSettings {
  temp_openai: number;
  freq_pen_openai: number;
  pres_pen_openai: number;
  top_p_openai: number;
  openai_max_tokens: number;
  stream_openai: boolean;
  /** The model field of the Custom source: what the model list offered. */
  custom_model: string;
  /** Custom stopping strings (at most 4 reach a chat completion). */
  stop: string[];
  /** -1 sends none. */
  seed: number;
  /** "Multiple swipes per generation": sent when above 1. */
  n: number;
  /** "Request token probabilities" (the user settings' `request_token_probabilities`). */
  request_token_probabilities: boolean;
  /** The token ids and values of the selected logit bias preset ({} for "Default (none)"). */
  logit_bias: Record<string, number>;
  /** The Custom source's "Include Body Parameters", already parsed from its YAML. */
  custom_include_body: Record<string, unknown>;
}

export const DEFAULT_SETTINGS: SillyTavernSettings = {
  temp_openai: 1,
  freq_pen_openai: 0,
  pres_pen_openai: 0,
  top_p_openai: 1,
  openai_max_tokens: 300,
  stream_openai: true,
  custom_model: "",
  stop: [],
  seed: -1,
  n: 1,
  request_token_probabilities: false,
  logit_bias: {},
  custom_include_body: {},
};

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

/** A character card's texts, as SillyTavern's default prompt order places them. */
export interface Character {
  name: string;
  description: string;
  personality: string;
  scenario: string;
  first_mes: string;
}

export type GenerationType = "normal" | "swipe" | "regenerate" | "continue" | "impersonate";

/**
 * The messages SillyTavern builds with its default prompt manager settings: the main prompt, the
 * card's description, personality and scenario, "[Start a new Chat]", the chat, then what the
 * generation type adds. Continue without "Continue prefill" ends with the continue nudge after the
 * chat; with it, the message being continued is the last, as an assistant prefill. Impersonate ends
 * with the impersonation prompt.
 */
export function sillyTavernMessages(character: Character, user: string, chat: ChatMessage[], type: GenerationType, options: { continuePrefill?: boolean } = {}): ChatMessage[] {
  const fill = (text: string) => text.replaceAll("{{char}}", character.name).replaceAll("{{charIfNotGroup}}", character.name).replaceAll("{{user}}", user);
  const messages: ChatMessage[] = [
    { role: "system", content: fill("Write {{char}}'s next reply in a fictional chat between {{charIfNotGroup}} and {{user}}.") },
    { role: "system", content: character.description },
    { role: "system", content: `[${character.name}'s personality: ${character.personality}]` },
    { role: "system", content: `[Circumstances and context of the dialogue: ${character.scenario}]` },
    { role: "system", content: "[Start a new Chat]" },
  ];
  if (type !== "continue") return [...messages, ...chat, ...(type === "impersonate" ? [impersonation(fill)] : [])];
  const continued = chat.at(-1)!;
  if (options.continuePrefill) return [...messages, ...chat];
  const nudge = `[Continue the following message. Do not include ANY parts of the original message. Use capitalization and punctuation as if your reply is a part of the original message: ${continued.content.trim()}]`;
  return [...messages, ...chat, { role: "system", content: nudge }];
}

function impersonation(fill: (text: string) => string): ChatMessage {
  return {
    role: "system",
    content: fill("[Write your next reply from the point of view of {{user}}, using the chat history so far as a guideline for the writing style of {{user}}. Don't write as {{char}} or system. Don't describe actions of {{char}}.]"),
  };
}

/** The body SillyTavern's server sends upstream for a Custom source (`requestBody` in POST /generate). */
export function sillyTavernBody(settings: SillyTavernSettings, messages: ChatMessage[], type: GenerationType): Record<string, unknown> {
  const multiSwipe = settings.n > 1 && type !== "continue" && type !== "impersonate";
  // The browser's generate_data, then the server's bodyParams for the Custom source.
  const logprobs = settings.request_token_probabilities ? 5 : undefined;
  const bodyParams: Record<string, unknown> = {
    logprobs: logprobs !== undefined && logprobs > 0 ? true : logprobs,
    top_logprobs: logprobs !== undefined && logprobs > 0 ? logprobs : undefined,
    ...settings.custom_include_body,
  };
  if (settings.stop.length > 0) bodyParams.stop = settings.stop.slice(0, 4);
  // Tools only when function calling is on and the request is not streamed; never here.
  bodyParams.tools = undefined;
  bodyParams.tool_choice = undefined;
  const requestBody = {
    messages,
    prompt: undefined,
    model: settings.custom_model,
    temperature: settings.temp_openai,
    max_tokens: settings.openai_max_tokens,
    max_completion_tokens: undefined,
    stream: settings.stream_openai,
    presence_penalty: settings.pres_pen_openai,
    frequency_penalty: settings.freq_pen_openai,
    top_p: settings.top_p_openai,
    top_k: undefined,
    stop: settings.stop.length > 0 ? settings.stop.slice(0, 4) : undefined,
    logit_bias: settings.logit_bias,
    seed: settings.seed >= 0 ? settings.seed : undefined,
    n: multiSwipe ? settings.n : undefined,
    ...bodyParams,
  };
  // What JSON.stringify would drop anyway: the keys left undefined.
  return Object.fromEntries(Object.entries(requestBody).filter(([, value]) => value !== undefined));
}

/** POST `{custom_url}/chat/completions` as SillyTavern's server does: node-fetch, its headers, no agent. */
export function sillyTavernGenerate(customUrl: string, apiKey: string, body: Record<string, unknown>): Promise<Response> {
  const controller = new AbortController();
  // SillyTavern's own object, passed whole to node-fetch (chat-completions.js, `config`).
  const config: RequestInit = {
    method: "post",
    headers: { "Content-Type": "application/json", Authorization: "Bearer " + apiKey },
    body: JSON.stringify(body),
    signal: controller.signal,
    timeout: 0,
  };
  return fetch(`${customUrl}/chat/completions`, config);
}

/** SillyTavern's status check (POST /status): GET `{custom_url}/models`, whose ids fill the model list. */
export function sillyTavernModels(customUrl: string, apiKey: string): Promise<Response> {
  return fetch(customUrl + "/models", { method: "GET", headers: { Authorization: "Bearer " + apiKey } });
}
