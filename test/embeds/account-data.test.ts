import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectApiError, expectOk } from "../support/assertions.ts";
import { archiveOf, purgeDeletedAccounts } from "../support/account-data.ts";
import { readIdEvents } from "../support/generations.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";
import { embeddedPersona, fromChatPage, newVisitor, SHOP, visitorSend } from "./helpers.ts";

// Visitors' conversations are the owner's data (ADR 0317): in the owner's export, with the embed
// settings and which conversations are visitors', never a visitor's token; gone with the owner's
// account purge, and the visitors' tokens with them.

let service: TestService;
let clock = Date.now();

beforeAll(async () => {
  service = await startTestService({ now: () => new Date(clock) });
});

afterAll(async () => {
  await service?.close();
});

describe("an embedded persona's data", () => {
  it("is in the owner's export and goes with the owner's account", async () => {
    const owner = await registerUser(service);
    const keep = await registerUser(service);
    const persona = await embeddedPersona(service, owner);
    const kept = await embeddedPersona(service, keep);
    const token = await newVisitor(service, persona.id);
    const keptToken = await newVisitor(service, kept.id);
    await readIdEvents(await visitorSend(service, persona.id, token, "A visitor's question about shipping"));
    await readIdEvents(await visitorSend(service, kept.id, keptToken, "Another site's visitor"));
    const { conversation_id: conversationId } = await expectOk(service.api.GET("/v1/embed/{persona_id}/conversation", { params: { path: { persona_id: persona.id } }, headers: fromChatPage(service, SHOP, token) }));

    const archive = await archiveOf(service.services, owner.id);
    const embeds = archive.embeds as { persona_id: string; allowed_origins: string[]; visitor_conversations: { conversation_id: string; visitor_messages: number }[] }[];
    expect(embeds).toEqual([expect.objectContaining({ persona_id: persona.id, enabled: true, allowed_origins: [SHOP], visitor_conversations: [expect.objectContaining({ conversation_id: conversationId, visitor_messages: 1 })] })]);
    const conversation = archive.conversations.find((row) => row.id === conversationId) as { messages: { content: string }[] } | undefined;
    expect(conversation?.messages.map((message) => message.content)).toContain("A visitor's question about shipping");
    expect(JSON.stringify(archive)).not.toContain(token);
    expect(JSON.stringify(archive)).not.toContain("Another site's visitor");

    await expectOk(service.clientFor(owner).DELETE("/v1/auth/me"));
    clock += 31 * 86_400_000;
    try {
      expect((await purgeDeletedAccounts(service.services)).users).toBeGreaterThanOrEqual(1);
    } finally {
      clock = Date.now();
    }
    const { knex } = service.services.db;
    expect(await knex("conversations").where({ id: conversationId })).toHaveLength(0);
    expect(await knex("persona_embeds").where({ persona_id: persona.id })).toHaveLength(0);
    expect(await knex("embed_conversations").where({ user_id: owner.id })).toHaveLength(0);
    expect(await knex("embed_guests").where({ persona_id: persona.id })).toHaveLength(0);
    expect(await knex("embed_daily_usage").where({ persona_id: persona.id })).toHaveLength(0);
    await expectApiError(service.api.GET("/v1/embed/{persona_id}/conversation", { params: { path: { persona_id: persona.id } }, headers: fromChatPage(service, SHOP, token) }), 404, "not_found");
    expect((await service.fetch(`/embed/${persona.id}`)).status).toBe(404);
    // Another owner's embed is untouched.
    expect((await expectOk(service.api.GET("/v1/embed/{persona_id}/conversation", { params: { path: { persona_id: kept.id } }, headers: fromChatPage(service, SHOP, keptToken) }))).data).toHaveLength(2);
  });
});
