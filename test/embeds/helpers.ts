import { expect } from "vitest";
import { expectOk } from "../support/assertions.ts";
import { createPersona } from "../support/chat.ts";
import { jsonHeaders, type TestService } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";

// The embed tests' shared steps: an embedded persona, its visitors, and their calls as the embed's
// chat page makes them (its requests carry the service's own Origin and name the embedding page's
// origin in X-Embed-Origin) or as a page on another origin would.

export const SHOP = "https://shop.example";
export const OTHER_SITE = "https://elsewhere.example";

/** A public persona of `owner`, embeddable from `origins`. */
export async function embeddedPersona(service: TestService, owner: TestUser, origins: string[] = [SHOP], overrides: Record<string, unknown> = {}) {
  const persona = await createPersona(service, owner, { is_public: true, ...overrides });
  await expectOk(service.clientFor(owner).PUT("/v1/personas/{id}/embed", { params: { path: { id: persona.id } }, body: { enabled: true, allowed_origins: origins } }));
  return persona;
}

/** The headers of a call from the embed's chat page framed in a page of `origin`. */
export function fromChatPage(service: TestService, origin: string, token?: string): Record<string, string> {
  return { origin: new URL(service.url).origin, "x-embed-origin": origin, ...(token ? { "x-embed-guest": token } : {}) };
}

/** A new visitor, from the chat page framed in `origin`; answers its token. */
export async function newVisitor(service: TestService, personaId: string, origin = SHOP, headers: Record<string, string> = {}): Promise<string> {
  const guest = await expectOk(
    service.api.POST("/v1/embed/{persona_id}/guests", { params: { path: { persona_id: personaId } }, headers: { ...fromChatPage(service, origin), ...headers } }),
    201,
  );
  expect(guest.token).toMatch(/^eg_/);
  return guest.token;
}

/** A visitor's streamed send, as the chat page sends it (a raw stream: the typed client reads JSON). */
export function visitorSend(service: TestService, personaId: string, token: string, content: string, headers: Record<string, string> = {}): Promise<Response> {
  return service.fetch(`/v1/embed/${personaId}/messages/stream`, {
    method: "POST",
    headers: { ...jsonHeaders, accept: "text/event-stream", ...fromChatPage(service, SHOP, token), ...headers },
    body: JSON.stringify({ content }),
  });
}
