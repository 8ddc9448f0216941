import { expect } from "vitest";

/** Asserts an error answer in the contract's envelope and returns its body. */
export async function expectError(response: Response, status: number, code: string) {
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(status);
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe("string");
  return body;
}
