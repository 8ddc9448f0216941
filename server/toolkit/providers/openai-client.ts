import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError } from "openai";
import { UpstreamError } from "./errors.ts";

export const OPENAI_BASE_URL = "https://api.openai.com/v1";

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
