import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError } from "../support/assertions.ts";
import { createConversation, createPersona, sendBlocking } from "../support/chat.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// A deleted account is disabled at once (DECISIONS: Account deletion): what it published leaves
// every public place from that moment, not at the purge 30 days later (issue 24, item 5).
let service: TestService;
let creator: TestUser;
let reader: TestUser;
let personaId: string;
let conversationId: string;
// Unique to this run: the service is lent, and another file may publish an oracle of its own.
const NAME = `Vanishing Oracle ${randomBytes(4).toString("hex")}`;

beforeAll(async () => {
  service = await startTestService();
  creator = await registerUser(service);
  reader = await registerUser(service);
  personaId = (await createPersona(service, creator, { name: NAME, is_public: true })).id;
  conversationId = (await createConversation(service, reader, personaId)).id;
});

afterAll(async () => {
  await service?.close();
});

const search = async () => (await service.clientFor(reader).GET("/v1/personas/explore", { params: { query: { q: NAME } } })).data!;
const explore = async () => (await search()).data;

describe("a deleted account's public persona", () => {
  it("is live before the deletion", async () => {
    expect((await explore()).map((p) => p.id)).toContain(personaId);
    expect((await service.fetch(`/v1/personas/${personaId}`, { headers: reader.auth })).status).toBe(200);
    expect((await sendBlocking(service, reader, conversationId, "Hello")).status).toBe(201);
  });

  it("is gone from explore, reads and chat at once after DELETE /v1/auth/me", async () => {
    const deleted = await service.fetch("/v1/auth/me", { method: "DELETE", headers: creator.auth });
    expect(deleted.status).toBe(200);
    expect((await explore()).map((p) => p.id)).not.toContain(personaId);
    const { total } = await search();
    expect(total).toBe(0);
    await expectError(await service.fetch(`/v1/personas/${personaId}`, { headers: reader.auth }), 404, "not_found");
    const messages = await service.services.db.knex("messages").where({ conversation_id: conversationId }).count<{ count: number }[]>({ count: "*" });
    await expectError(await sendBlocking(service, reader, conversationId, "Are you there?"), 404, "not_found");
    await expectError(
      await service.clientFor(reader).POST("/v1/conversations", { body: { persona_id: personaId } }),
      404,
      "not_found",
    );
    // Nothing was written for the refused message.
    expect(await service.services.db.knex("messages").where({ conversation_id: conversationId }).count<{ count: number }[]>({ count: "*" })).toEqual(messages);
  });
});
