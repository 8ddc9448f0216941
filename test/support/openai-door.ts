import { expect } from "vitest";
import type { FakeOpenAI } from "../fakes/openai-server.ts";
import type { ApiAnswer } from "./api.ts";

/** A service's settings for a chat model that is the fake OpenAI upstream: no retries, short waits. */
export function fakeUpstreamEnv(fake: FakeOpenAI): Record<string, string> {
  return { OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test-secret", LLM_MAX_RETRIES: "0", LLM_TIMEOUT_MS: "5000", STREAM_KEEPALIVE_MS: "150" };
}

/** An OpenAI-shaped error answer of `/openai/v1`: a raw Response, or what a typed-client call resolves to. */
export async function expectOpenAIError(answer: Response | ApiAnswer, status: number, code: string | null, param?: string | null) {
  const [actual, body] = answer instanceof Response ? [answer.status, await answer.json()] : [answer.response.status, (answer.error ?? answer.data) as { error: unknown }];
  expect(actual, JSON.stringify(body)).toBe(status);
  expect(Object.keys(body)).toEqual(["error"]);
  expect(body.error).toEqual({ message: expect.any(String), type: expect.any(String), param: param === undefined ? expect.anything() : param, code });
  return body.error as { message: string; type: string; param: string | null; code: string | null };
}
