import { expect } from "vitest";
import { v7 as uuidv7 } from "uuid";
import { jsonHeaders, type TestService } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";

/** A JSON call as `user`, expecting `status`; returns the body. */
export async function call(service: TestService, user: TestUser | undefined, method: string, path: string, status: number, body?: unknown) {
  const response = await service.fetch(path, {
    method,
    headers: { ...(user ? user.auth : {}), ...(body === undefined ? {} : jsonHeaders) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  expect(response.status, text).toBe(status);
  return text ? JSON.parse(text) : undefined;
}

/** A persona of `user` (public unless said otherwise), created through the API. */
export async function makePersona(service: TestService, user: TestUser, name: string, fields: Record<string, unknown> = {}): Promise<{ id: string; name: string }> {
  return call(service, user, "POST", "/v1/personas", 201, {
    name,
    instructions: `You are ${name}.`,
    description: `${name}, described.`,
    greeting_message: "Hi.",
    is_public: true,
    ...fields,
  });
}

/** Disables the account as DELETE /v1/auth/me does (deleted_at set, in the grace period). */
export async function deleteAccount(service: TestService, user: TestUser): Promise<void> {
  const response = await service.fetch("/v1/auth/me", { method: "DELETE", headers: user.auth });
  expect(response.status).toBe(200);
}

/** `count` messages with the persona, written straight to the database at `at`. */
export async function messagesFor(service: TestService, user: TestUser, personaId: string, count: number, at: Date): Promise<void> {
  const { knex } = service.services.db;
  const conversationId = uuidv7();
  await knex("conversations").insert({ id: conversationId, user_id: user.id, persona_id: personaId, title: null, message_count: count, created_at: at, updated_at: at });
  await knex("messages").insert(
    Array.from({ length: count }, () => ({
      id: uuidv7(),
      conversation_id: conversationId,
      user_id: user.id,
      persona_id: personaId,
      role: "user",
      content: "Hello",
      created_at: at,
    })),
  );
}
