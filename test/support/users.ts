import { randomBytes, randomUUID } from "node:crypto";
import { expect } from "vitest";
import { newApiKey, sha256 } from "../../server/toolkit/tokens.ts";
import type { TestService } from "./service.ts";

export interface TestUser {
  id: string;
  email: string;
  username: string;
  password: string;
  accessToken: string;
  refreshToken: string;
  /** Headers that authenticate as this user with the session token. */
  auth: { authorization: string };
}

/** Registers a new user through the API and returns their session credentials. */
export async function registerUser(service: TestService, overrides: Partial<{ email: string; username: string; password: string }> = {}): Promise<TestUser> {
  const suffix = randomBytes(4).toString("hex");
  const input = { email: `user_${suffix}@example.com`, username: `user_${suffix}`, password: "Correct-horse-9", ...overrides };
  const response = await service.fetch("/v1/auth/register", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(input),
  });
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(201);
  return {
    id: body.user.id,
    ...input,
    accessToken: body.access_token,
    refreshToken: body.refresh_token,
    auth: { authorization: `Bearer ${body.access_token}` },
  };
}

/**
 * An API key for the user, written straight to the database (the key endpoints are tested on their
 * own); keys do not expire, which suits tests that move the clock.
 */
export async function apiKeyFor(service: TestService, user: TestUser, scopes: string[] = ["admin"]): Promise<string> {
  const { key, hint } = newApiKey();
  await service.services.db.knex("api_keys").insert({
    id: randomUUID(),
    user_id: user.id,
    name: "test key",
    key_hash: sha256(key),
    key_hint: hint,
    scopes,
    created_at: new Date(),
  });
  return key;
}
