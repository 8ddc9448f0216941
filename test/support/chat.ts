import { expect } from "vitest";
import type { TestService } from "./service.ts";
import { jsonHeaders } from "./service.ts";
import type { TestUser } from "./users.ts";

export { readEvents } from "./sse.ts";

/** Creates a persona through the API and answers its body. */
export async function createPersona(service: TestService, user: TestUser, overrides: Record<string, unknown> = {}) {
  const response = await service.fetch("/v1/personas", {
    method: "POST",
    headers: { ...jsonHeaders, ...user.auth },
    body: JSON.stringify({ name: "Captain Nova", instructions: "You are Captain Nova, a retired starship captain.", greeting_message: "Welcome aboard!", ...overrides }),
  });
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(201);
  return body as { id: string; model: string; is_public: boolean };
}

export async function createConversation(service: TestService, user: TestUser, personaId: string, title?: string) {
  const response = await service.fetch("/v1/conversations", {
    method: "POST",
    headers: { ...jsonHeaders, ...user.auth },
    body: JSON.stringify({ persona_id: personaId, ...(title ? { title } : {}) }),
  });
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(201);
  // `active_message_id`: the greeting, stored as the first message when the conversation is created.
  return body as { id: string; persona_id: string; title: string | null; message_count: number; active_message_id: string | null };
}

export function sendStream(service: TestService, user: TestUser, conversationId: string, content: string, extra: RequestInit & { headers?: Record<string, string> } = {}) {
  return service.fetch(`/v1/conversations/${conversationId}/messages/stream`, {
    ...extra,
    method: "POST",
    headers: { ...jsonHeaders, ...user.auth, ...(extra.headers ?? {}) },
    body: JSON.stringify({ content }),
  });
}

export function sendBlocking(service: TestService, user: TestUser, conversationId: string, content: string, headers: Record<string, string> = {}) {
  return service.fetch(`/v1/conversations/${conversationId}/messages`, {
    method: "POST",
    headers: { ...jsonHeaders, ...user.auth, ...headers },
    body: JSON.stringify({ content }),
  });
}
