import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { v7 as uuidv7 } from "uuid";
import { expectError } from "../support/assertions.ts";
import { createConversation, createPersona, sendBlocking, sendStream } from "../support/chat.ts";
import type { RequestBody } from "../../sdk/src/types.ts";
import { sendRaw } from "../support/raw.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// Conversations: create, list, read, delete, the message list and search, and what other users get.
let service: TestService;
let alice: TestUser;
let bob: TestUser;
let alicePersona: { id: string };
let publicPersona: { id: string };

beforeAll(async () => {
  service = await startTestService();
  alice = await registerUser(service);
  bob = await registerUser(service);
  alicePersona = await createPersona(service, alice);
  publicPersona = await createPersona(service, bob, { name: "Public Pat", is_public: true });
});

afterAll(async () => {
  await service?.close();
});

const get = (user: TestUser, path: string) => service.fetch(path, { headers: user.auth });
const create = (user: { auth: Record<string, string> }, body: RequestBody<"conversations_create">) => service.clientFor(user).POST("/v1/conversations", { body });

/** Writes `count` alternating messages straight into a conversation, one second apart. */
async function seedMessages(conversationId: string, user: TestUser, personaId: string, count: number, start = Date.UTC(2026, 0, 1)) {
  const rows = Array.from({ length: count }, (_, i) => ({
    id: uuidv7(),
    conversation_id: conversationId,
    user_id: user.id,
    persona_id: personaId,
    role: i % 2 === 0 ? "user" : "assistant",
    content: `message ${i}`,
    content_tokens: 3,
    created_at: new Date(start + i * 1000),
    depth: i + 1,
  }));
  // One straight path: each message follows the one before, the last is the active leaf.
  const chained = rows.map((row, i) => ({ ...row, parent_id: i === 0 ? null : rows[i - 1]!.id }));
  await service.services.db.knex("messages").insert(chained);
  await service.services.db.knex("conversations").where({ id: conversationId }).update({ message_count: count, active_message_id: rows.at(-1)?.id ?? null });
  return rows;
}

describe("creating a conversation", () => {
  it("answers 201 with no exchanged message (the greeting is its first one) and records conversation.created", async () => {
    const { data, error, response } = await create(alice, { persona_id: alicePersona.id, title: "Stars" });
    expect(response.status, JSON.stringify(error ?? data)).toBe(201);
    const body = data!;
    expect(body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      persona_id: alicePersona.id,
      title: "Stars",
      message_count: 0,
      // The greeting, stored as the first message (test/conversations/greeting.test.ts).
      active_message_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      usage: { input_tokens: 0, output_tokens: 0 },
      created_at: expect.any(String),
      updated_at: body.created_at,
    });
    const event = await service.services.db.knex("event_outbox").where({ type: "conversation.created", user_id: alice.id }).orderBy("created_at", "desc").first();
    expect(event.data).toMatchObject({ conversation_id: body.id, persona_id: alicePersona.id, title: "Stars" });
  });

  it("works with another user's public persona", async () => {
    const conversation = await createConversation(service, alice, publicPersona.id);
    expect(conversation.title).toBeNull();
  });

  it("is 404 for another user's private persona and for an unknown one, and writes nothing", async () => {
    const bobs = () => service.services.db.knex("conversations").where({ user_id: bob.id }).count({ n: "*" }).first();
    const before = await bobs();
    await expectError(await create(bob, { persona_id: alicePersona.id }), 404, "not_found");
    await expectError(await create(bob, { persona_id: randomUUID() }), 404, "not_found");
    const after = await bobs();
    expect(after).toEqual(before);
  });

  it("refuses bad input with 400", async () => {
    await expectError(await sendRaw(service, "POST", "/v1/conversations", { body: {}, headers: alice.auth }), 400, "invalid_request");
    await expectError(await create(alice, { persona_id: "not-a-uuid" }), 400, "invalid_request");
    await expectError(await create(alice, { persona_id: alicePersona.id, title: "" }), 400, "invalid_request");
    await expectError(await create(alice, { persona_id: alicePersona.id, title: "x".repeat(201) }), 400, "invalid_request");
    const ok = await create(alice, { persona_id: alicePersona.id, title: "x".repeat(200) });
    expect(ok.response.status).toBe(201);
  });
});

describe("listing conversations", () => {
  it("pages with has_more and total, most recently updated first, and filters by persona", async () => {
    const carol = await registerUser(service);
    const persona = await createPersona(service, carol);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createConversation(service, carol, persona.id, `c${i}`)).id);
    await createConversation(service, carol, publicPersona.id, "other persona");

    const first = await (await get(carol, `/v1/conversations?persona_id=${persona.id}&limit=2`)).json();
    expect(first.total).toBe(5);
    expect(first.has_more).toBe(true);
    expect(first.data.map((c: { id: string }) => c.id)).toEqual([ids[4], ids[3]]);
    const last = await (await get(carol, `/v1/conversations?persona_id=${persona.id}&limit=2&offset=4`)).json();
    expect(last.has_more).toBe(false);
    expect(last.data.map((c: { id: string }) => c.id)).toEqual([ids[0]]);
    const all = await (await get(carol, "/v1/conversations?limit=100")).json();
    expect(all.total).toBe(6);

    // A new message moves a conversation to the top.
    expect((await sendBlocking(service, carol, ids[0]!, "hello")).status).toBe(201);
    const moved = await (await get(carol, `/v1/conversations?persona_id=${persona.id}&limit=1`)).json();
    expect(moved.data[0]).toMatchObject({ id: ids[0], message_count: 2 });
  });

  it("shows nothing of other users", async () => {
    const dave = await registerUser(service);
    const body = await (await get(dave, "/v1/conversations")).json();
    expect(body).toEqual({ data: [], has_more: false, total: 0 });
  });

  it("checks limit and offset", async () => {
    await expectError(await get(alice, "/v1/conversations?limit=0"), 400, "invalid_request");
    await expectError(await get(alice, "/v1/conversations?limit=101"), 400, "invalid_request");
    await expectError(await get(alice, "/v1/conversations?offset=-1"), 400, "invalid_request");
    expect((await get(alice, "/v1/conversations?limit=100")).status).toBe(200);
  });
});

describe("reading a conversation and its messages", () => {
  it("embeds the 50 most recent messages, oldest first", async () => {
    const conversation = await createConversation(service, alice, alicePersona.id);
    const rows = await seedMessages(conversation.id, alice, alicePersona.id, 60);
    const body = await (await get(alice, `/v1/conversations/${conversation.id}`)).json();
    expect(body.message_count).toBe(60);
    expect(body.messages).toHaveLength(50);
    expect(body.messages[0].content).toBe("message 10");
    expect(body.messages[49].content).toBe("message 59");
    expect(body.messages[1]).toEqual({
      id: rows[11]!.id,
      conversation_id: conversation.id,
      role: "assistant",
      content: "message 11",
      created_at: rows[11]!.created_at.toISOString(),
      citations: [],
      parent_id: rows[10]!.id,
      alternative_index: 0,
      alternative_count: 1,
    });
  });

  it("lists messages newest first, pages before a message id, and tells has_more", async () => {
    const conversation = await createConversation(service, alice, alicePersona.id);
    const rows = await seedMessages(conversation.id, alice, alicePersona.id, 7);
    const page = await (await get(alice, `/v1/conversations/${conversation.id}/messages?limit=3`)).json();
    expect(page.data.map((m: { content: string }) => m.content)).toEqual(["message 6", "message 5", "message 4"]);
    expect(page.has_more).toBe(true);
    const older = await (await get(alice, `/v1/conversations/${conversation.id}/messages?limit=3&before=${rows[4]!.id}`)).json();
    expect(older.data.map((m: { content: string }) => m.content)).toEqual(["message 3", "message 2", "message 1"]);
    expect(older.has_more).toBe(true);
    const oldest = await (await get(alice, `/v1/conversations/${conversation.id}/messages?limit=3&before=${rows[1]!.id}`)).json();
    expect(oldest).toEqual({ data: [expect.objectContaining({ content: "message 0" })], has_more: false });
    const withOffset = await (await get(alice, `/v1/conversations/${conversation.id}/messages?limit=2&offset=5`)).json();
    expect(withOffset.data.map((m: { content: string }) => m.content)).toEqual(["message 1", "message 0"]);
  });

  it("is 404 for a `before` that is not a message of this conversation, 400 for one that is not a UUID", async () => {
    const conversation = await createConversation(service, alice, alicePersona.id);
    await expectError(await get(alice, `/v1/conversations/${conversation.id}/messages?before=${randomUUID()}`), 404, "not_found");
    await expectError(await get(alice, `/v1/conversations/${conversation.id}/messages?before=nope`), 400, "invalid_request");
    await expectError(await get(alice, `/v1/conversations/${conversation.id}/messages?limit=101`), 400, "invalid_request");
  });

  it("is 404 for unknown ids and 400 for malformed ones", async () => {
    await expectError(await get(alice, `/v1/conversations/${randomUUID()}`), 404, "not_found");
    const malformed = await expectError(await get(alice, "/v1/conversations/not-an-id"), 400, "invalid_request");
    expect(malformed.error.details.errors[0].path).toBe("/params/id");
  });
});

describe("deleting a conversation", () => {
  it("removes it with its messages", async () => {
    const conversation = await createConversation(service, alice, alicePersona.id);
    await seedMessages(conversation.id, alice, alicePersona.id, 4);
    const response = await service.fetch(`/v1/conversations/${conversation.id}`, { method: "DELETE", headers: alice.auth });
    expect(await response.json()).toEqual({ id: conversation.id, deleted: true });
    const left = await service.services.db.knex("messages").where({ conversation_id: conversation.id }).count({ n: "*" }).first();
    expect(Number(left?.n)).toBe(0);
    await expectError(await get(alice, `/v1/conversations/${conversation.id}`), 404, "not_found");
    await expectError(await service.fetch(`/v1/conversations/${conversation.id}`, { method: "DELETE", headers: alice.auth }), 404, "not_found");
  });
});

describe("another user", () => {
  it("gets 404 on every route of someone else's conversation, and changes nothing", async () => {
    const conversation = await createConversation(service, alice, publicPersona.id, "Mine");
    await seedMessages(conversation.id, alice, publicPersona.id, 2);
    const id = conversation.id;
    await expectError(await get(bob, `/v1/conversations/${id}`), 404, "not_found");
    await expectError(await get(bob, `/v1/conversations/${id}/messages`), 404, "not_found");
    await expectError(await sendBlocking(service, bob, id, "hi"), 404, "not_found");
    await expectError(await sendStream(service, bob, id, "hi"), 404, "not_found");
    await expectError(await service.fetch(`/v1/conversations/${id}`, { method: "DELETE", headers: bob.auth }), 404, "not_found");
    const list = await (await get(bob, `/v1/conversations?persona_id=${publicPersona.id}`)).json();
    expect(list.data.find((c: { id: string }) => c.id === id)).toBeUndefined();
    const search = await (await get(bob, "/v1/conversations/search?q=message")).json();
    expect(search.data.find((hit: { conversation: { id: string } }) => hit.conversation.id === id)).toBeUndefined();
    const still = await (await get(alice, `/v1/conversations/${id}`)).json();
    expect(still.message_count).toBe(2);
  });

  it("needs the conversations scopes", async () => {
    const { apiKeyFor } = await import("../support/users.ts");
    const key = await apiKeyFor(service, alice, ["personas:read"]);
    await expectError(await service.fetch("/v1/conversations", { headers: { "x-api-key": key } }), 403, "forbidden");
    const reader = await apiKeyFor(service, alice, ["conversations:read"]);
    expect((await service.fetch("/v1/conversations", { headers: { "x-api-key": reader } })).status).toBe(200);
    await expectError(await create({ auth: { "x-api-key": reader } }, { persona_id: alicePersona.id }), 403, "forbidden");
  });
});

describe("searching messages", () => {
  it("finds the caller's messages with HTML-escaped highlights", async () => {
    const erin = await registerUser(service);
    const persona = await createPersona(service, erin);
    const conversation = await createConversation(service, erin, persona.id, "Planets <b>");
    const knex = service.services.db.knex;
    const base = { conversation_id: conversation.id, user_id: erin.id, persona_id: persona.id, content_tokens: 5 };
    const ids = [uuidv7(), uuidv7(), uuidv7()];
    await knex("messages").insert([
      { ...base, id: ids[0], depth: 1, role: "user", content: `Is Venus <script>alert("x")</script> & Mars "red"?`, created_at: new Date(Date.UTC(2026, 0, 1)) },
      { ...base, id: ids[1], parent_id: ids[0], depth: 2, role: "assistant", content: "Venus is bright; Venus is hot.", created_at: new Date(Date.UTC(2026, 0, 2)) },
      { ...base, id: ids[2], parent_id: ids[1], depth: 3, role: "user", content: "Tell me about Jupiter \u0001 and \u0002 markers", created_at: new Date(Date.UTC(2026, 0, 3)) },
    ]);
    await knex("conversations").where({ id: conversation.id }).update({ active_message_id: ids[2], message_count: 3 });
    const body = await (await get(erin, "/v1/conversations/search?q=venus")).json();
    expect(body.total).toBe(2);
    expect(body.has_more).toBe(false);
    const hits = body.data as { message: { id: string; content: string }; conversation: { id: string; title: string }; highlight: string }[];
    // The reply names Venus twice, so it ranks first.
    expect(hits[0]!.highlight).toBe("<mark>Venus</mark> is bright; <mark>Venus</mark> is hot.");
    expect(hits[1]!.highlight).toBe("Is <mark>Venus</mark> &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; Mars &quot;red&quot;?");
    expect(hits[1]!.conversation).toEqual({ id: conversation.id, title: "Planets <b>" });
    for (const hit of hits) expect(hit.highlight.replace(/<\/?mark>/g, "")).not.toMatch(/[<>]/);

    const jupiter = await (await get(erin, "/v1/conversations/search?q=jupiter")).json();
    expect(jupiter.data[0].highlight).toBe("Tell me about <mark>Jupiter</mark>   and   markers");
    expect(jupiter.data[0].message.content).toContain("\u0001");

    const paged = await (await get(erin, "/v1/conversations/search?q=venus&limit=1")).json();
    expect(paged).toMatchObject({ total: 2, has_more: true });
    const second = await (await get(erin, "/v1/conversations/search?q=venus&limit=1&offset=1")).json();
    expect(second.data[0].message.id).toBe(hits[1]!.message.id);
    expect((await (await get(erin, "/v1/conversations/search?q=pluto")).json())).toEqual({ data: [], has_more: false, total: 0 });
  });

  it("checks q and limit", async () => {
    await expectError(await get(alice, "/v1/conversations/search"), 400, "invalid_request");
    await expectError(await get(alice, "/v1/conversations/search?q="), 400, "invalid_request");
    await expectError(await get(alice, `/v1/conversations/search?q=${"a".repeat(201)}`), 400, "invalid_request");
    await expectError(await get(alice, "/v1/conversations/search?q=a&limit=101"), 400, "invalid_request");
    // Operators of web search syntax are not errors (encoded as URLSearchParams and browsers do).
    expect((await get(alice, `/v1/conversations/search?${new URLSearchParams({ q: '"venus" -mars or (' })}`)).status).toBe(200);
  });
});
