import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError } from "openai";
import { OPENAI_DEFAULT_BASE_URL } from "../config.ts";
import type { Logger } from "../logger.ts";
import { UpstreamError } from "./errors.ts";

export const OPENAI_BASE_URL = OPENAI_DEFAULT_BASE_URL;

/** A client of the `openai` package for any OpenAI-compatible base URL, configured only from our settings. */
export function openaiClient(settings: { baseUrl: string | undefined; apiKey: string | undefined; timeoutMs: number; maxRetries: number }): OpenAI {
  return new OpenAI({
    baseURL: settings.baseUrl ?? OPENAI_BASE_URL,
    // Local servers (Ollama, vLLM, llama.cpp) need no key, but the package insists on one; a wrong
    // key is the provider's 401 to report, not a reason for the service not to start.
    apiKey: settings.apiKey ?? "not-needed",
    // Settings come from server/toolkit/config.ts only: stop the package reading OPENAI_* variables itself.
    organization: null,
    project: null,
    timeout: settings.timeoutMs,
    maxRetries: settings.maxRetries,
  });
}

/** The capabilities an OpenAI-compatible API may serve, each chosen by settings of its own. */
export type Capability = "chat" | "embeddings" | "speech" | "images";

/**
 * What each capability's provider is called in a message, and the settings that choose it: a
 * failure names them, so that an operator whose server lacks the capability knows what to change
 * (issue 34, item 9: a chat-only server set in OPENAI_BASE_URL once took every capability).
 */
export const CAPABILITIES: Record<Capability, { what: string; settings: string }> = {
  chat: { what: "The model provider", settings: "Chat is set by OPENAI_BASE_URL, OPENAI_API_KEY and the persona's model (CHAT_MODEL); LLM_PROVIDER=local is the offline model" },
  embeddings: { what: "The embeddings provider", settings: "Embeddings are set by EMBEDDINGS_BASE_URL (else OPENAI_BASE_URL), EMBEDDINGS_API_KEY and EMBEDDINGS_MODEL; EMBEDDINGS_PROVIDER=local is the offline embedding" },
  speech: { what: "The speech provider", settings: "Speech is set by SPEECH_BASE_URL (else OPENAI_BASE_URL), SPEECH_API_KEY, TTS_MODEL and STT_MODEL; SPEECH_PROVIDER=local is the offline voices" },
  images: { what: "The image provider", settings: "Images are set by IMAGES_BASE_URL (else OPENAI_BASE_URL), IMAGES_API_KEY and IMAGE_MODEL; IMAGES_PROVIDER=local draws offline, off switches images off" },
};

/**
 * The error callers see when a provider call fails. Messages are ours, never the upstream's: those
 * can echo part of the API key (OpenAI's 401 does) or the input. Only the status and a short error
 * code are kept. `what` names the provider in the message, e.g. "The model provider".
 */
export function providerError(error: unknown, what: string): UpstreamError {
  if (error instanceof UpstreamError) return error;
  if (error instanceof APIConnectionTimeoutError) return new UpstreamError(`${what} did not answer in time`);
  if (error instanceof APIConnectionError) return new UpstreamError(`Could not reach ${what.replace(/^The /, "the ")}`, undefined, { cause: error.cause });
  if (error instanceof APIError) {
    const code = [error.code, error.type].find((c): c is string => typeof c === "string" && /^[\w.-]{1,64}$/.test(c));
    if (error.status === undefined) return new UpstreamError(`${what} sent an error in its stream${code ? ` (${code})` : ""}`);
    return new UpstreamError(`${what} answered ${error.status}${code ? ` (${code})` : ""}`, error.status);
  }
  // What is left are failures while reading the body: a dropped connection, malformed data.
  return new UpstreamError(`${what}'s answer broke off`, undefined, { cause: error });
}

/**
 * How an `openai` provider of `capability` reports a failure: the error of `providerError`, its
 * message followed by the settings that choose the capability, and a warning in the log naming the
 * capability, the server (its origin: never a key) and the status. Every failure of the provider
 * goes through it once, whichever caller (a request, a stream, a job) meets it.
 */
export function providerFailures(capability: Capability, baseUrl: string | undefined, log: Logger | undefined): (error: unknown) => UpstreamError {
  const { what, settings } = CAPABILITIES[capability];
  const server = new URL(baseUrl ?? OPENAI_BASE_URL).origin;
  return (error) => {
    const failure = providerError(error, what);
    const reported = failure.settings
      ? failure
      : new UpstreamError(`${failure.message.replace(/\.$/, "")}. ${settings}.`, failure.status, { cause: failure.cause, settings });
    log?.warn({ capability, provider: "openai", server, status: reported.status }, reported.message);
    return reported;
  };
}
