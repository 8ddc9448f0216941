import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectApiError, expectOk } from "../support/assertions.ts";
import { readIdEvents } from "../support/generations.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { embeddedPersona, fromChatPage, newVisitor, SHOP, visitorSend } from "./helpers.ts";

// An embedded persona's visitors are limited per visitor and per client address, a persona's
// visitors together by the daily cap its owner sets, and the owner's monthly quota pays for their
// messages (ADR 0317). Each test speaks from its own addresses (X-Forwarded-For behind a trusted
// proxy), so the address counts of one do not reach another.

const PER_VISITOR = 2;
const PER_ADDRESS = 5;
const NEW_PER_ADDRESS = 4;

let service: TestService;

beforeAll(async () => {
  service = await startTestService({
    env: {
      TRUST_PROXY: "true",
      EMBED_GUEST_MESSAGES_PER_MINUTE: String(PER_VISITOR),
      EMBED_IP_MESSAGES_PER_MINUTE: String(PER_ADDRESS),
      EMBED_GUESTS_PER_IP_PER_HOUR: String(NEW_PER_ADDRESS),
    },
  });
});

afterAll(async () => {
  await service?.close();
});

const from = (address: string) => ({ "x-forwarded-for": address });

/** A visitor's message to its end; the answer's status, and its error body when refused. */
async function send(personaId: string, token: string, address: string, content = "Hello") {
  const answer = await visitorSend(service, personaId, token, content, from(address));
  if (answer.status !== 200) return { status: answer.status, retryAfter: Number(answer.headers.get("retry-after")), body: (await answer.json()) as { error: { code: string; message: string } } };
  const events = await readIdEvents(answer);
  expect(events.at(-1)?.event).toBe("done");
  return { status: 200, retryAfter: 0, body: undefined };
}

const usedByOwner = async (user: TestUser) => (await expectOk(service.clientFor(user).GET("/v1/billing/usage"))).usage.messages_sent;

describe("embed visitors' limits", () => {
  it("a visitor sends at most EMBED_GUEST_MESSAGES_PER_MINUTE a minute; another visitor at the same address still may", async () => {
    const persona = await embeddedPersona(service, await registerUser(service));
    const address = "198.51.100.1";
    const [first, second] = [await newVisitor(service, persona.id, SHOP, from(address)), await newVisitor(service, persona.id, SHOP, from(address))];
    for (let i = 0; i < PER_VISITOR; i++) expect((await send(persona.id, first, address)).status).toBe(200);
    const refused = await send(persona.id, first, address);
    expect(refused.status).toBe(429);
    expect(refused.body?.error.code).toBe("rate_limited");
    expect(refused.retryAfter).toBeGreaterThanOrEqual(1);
    expect((await send(persona.id, second, address)).status).toBe(200);
    // A spoken reply is counted like a message.
    const transcript = await expectOk(service.api.GET("/v1/embed/{persona_id}/conversation", { params: { path: { persona_id: persona.id } }, headers: fromChatPage(service, SHOP, first) }));
    const reply = transcript.data.find((message) => message.role === "assistant")!;
    await expectApiError(service.api.POST("/v1/embed/{persona_id}/speech", {
      params: { path: { persona_id: persona.id } },
      headers: { ...fromChatPage(service, SHOP, first), ...from(address) },
      body: { message_id: reply.id },
      parseAs: "arrayBuffer",
    }), 429, "rate_limited");
  });

  it("an address sends at most EMBED_IP_MESSAGES_PER_MINUTE a minute, whatever its visitors; another address is not held", async () => {
    const persona = await embeddedPersona(service, await registerUser(service));
    const address = "198.51.100.2";
    const visitors = [];
    for (let i = 0; i < 3; i++) visitors.push(await newVisitor(service, persona.id, SHOP, from(address)));
    const statuses = [];
    for (const token of visitors) for (let i = 0; i < PER_VISITOR; i++) statuses.push((await send(persona.id, token, address)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const elsewhere = await newVisitor(service, persona.id, SHOP, from("198.51.100.3"));
    expect((await send(persona.id, elsewhere, "198.51.100.3")).status).toBe(200);
  });

  it("an address starts at most EMBED_GUESTS_PER_IP_PER_HOUR visitors an hour", async () => {
    const persona = await embeddedPersona(service, await registerUser(service));
    const address = "198.51.100.4";
    for (let i = 0; i < NEW_PER_ADDRESS; i++) await newVisitor(service, persona.id, SHOP, from(address));
    const refused = await expectApiError(
      service.api.POST("/v1/embed/{persona_id}/guests", { params: { path: { persona_id: persona.id } }, headers: { ...fromChatPage(service, SHOP), ...from(address) } }),
      429,
      "rate_limited",
    );
    expect(refused.error.details?.retry_after).toBeGreaterThanOrEqual(1);
    await newVisitor(service, persona.id, SHOP, from("198.51.100.5"));
  });

  it("a persona's visitors together send at most its daily cap; the owner's other personas are not held", async () => {
    const owner = await registerUser(service);
    const capped = await embeddedPersona(service, owner);
    await expectOk(service.clientFor(owner).PUT("/v1/personas/{id}/embed", { params: { path: { id: capped.id } }, body: { daily_message_cap: 2 } }));
    const other = await embeddedPersona(service, owner);
    const [a, b] = [await newVisitor(service, capped.id, SHOP, from("198.51.100.6")), await newVisitor(service, capped.id, SHOP, from("198.51.100.7"))];
    expect((await send(capped.id, a, "198.51.100.6")).status).toBe(200);
    expect((await send(capped.id, b, "198.51.100.7")).status).toBe(200);
    const refused = await send(capped.id, b, "198.51.100.7");
    expect(refused.status).toBe(429);
    expect(refused.body?.error.message).toMatch(/today/);
    // Until the next UTC day.
    expect(refused.retryAfter).toBeGreaterThanOrEqual(1);
    expect(refused.retryAfter).toBeLessThanOrEqual(24 * 60 * 60);
    expect(await expectOk(service.clientFor(owner).GET("/v1/personas/{id}/embed", { params: { path: { id: capped.id } } }))).toMatchObject({ messages_today: 2, daily_message_cap: 2 });
    const c = await newVisitor(service, other.id, SHOP, from("198.51.100.8"));
    expect((await send(other.id, c, "198.51.100.8")).status).toBe(200);
  });

  it("visitors' messages count against the owner's monthly quota; once it is used up they are refused without the owner's plan details", async () => {
    const creator = await registerUser(service);
    const persona = await embeddedPersona(service, creator);
    const period = new Date().toISOString().slice(0, 8) + "01";
    await service.services.db.knex("usage_counters").insert({ user_id: creator.id, period_start: period, messages_sent: 198 });
    const token = await newVisitor(service, persona.id, SHOP, from("198.51.100.9"));
    expect((await send(persona.id, token, "198.51.100.9")).status).toBe(200);
    expect(await usedByOwner(creator)).toBe(199);
    const other = await newVisitor(service, persona.id, SHOP, from("198.51.100.10"));
    expect((await send(persona.id, other, "198.51.100.10")).status).toBe(200);
    expect(await usedByOwner(creator)).toBe(200);

    const refused = await send(persona.id, other, "198.51.100.10");
    expect(refused.status).toBe(429);
    expect(refused.body?.error.code).toBe("rate_limited");
    expect(refused.body?.error.message).not.toMatch(/plan|free|200|quota/i);
    expect(refused.body?.error).not.toHaveProperty("details.plan");
    expect(await usedByOwner(creator)).toBe(200);
    // The refused message took nothing of the persona's daily cap.
    expect(await expectOk(service.clientFor(creator).GET("/v1/personas/{id}/embed", { params: { path: { id: persona.id } } }))).toMatchObject({ messages_today: 2 });
  });
});
