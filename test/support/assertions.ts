import { expect } from "vitest";
import type { ErrorCode, Schemas } from "../../sdk/src/types.ts";
import type { ApiAnswer } from "./api.ts";

/**
 * Asserts an error answer in the contract's envelope and returns its body: a raw fetch Response,
 * or what a call of the typed client (service.api, service.clientFor) resolves to.
 */
export async function expectError(answer: Response | ApiAnswer, status: number, code: string) {
  const [actual, body] = answer instanceof Response ? [answer.status, await answer.json()] : [answer.response.status, answer.error ?? answer.data];
  expect(actual, JSON.stringify(body)).toBe(status);
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe("string");
  return body;
}

/** Awaits a typed-client call, asserts its error status and code, and returns the envelope. */
export async function expectApiError(call: Promise<ApiAnswer>, status: number, code: ErrorCode): Promise<Schemas["Error"]> {
  return expectError(await call, status, code);
}

/** Awaits a typed-client call, asserts its status (200 unless told) and returns its body, typed from the contract. */
export async function expectOk<A extends ApiAnswer>(call: Promise<A>, status = 200): Promise<NonNullable<A["data"]>> {
  const { data, error, response } = await call;
  expect(response.status, JSON.stringify(error ?? data)).toBe(status);
  return data as NonNullable<A["data"]>;
}
