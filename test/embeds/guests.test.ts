import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operations } from "../../server/toolkit/contract.ts";
import { ScriptedModel } from "../replies/fakes.ts";
import { expectApiError, expectOk } from "../support/assertions.ts";
import { readIdEvents, generationOf, contentOf } from "../support/generations.ts";
import { sendRaw } from "../support/raw.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { until } from "../support/wait.ts";
import { embeddedPersona, fromChatPage, newVisitor, OTHER_SITE, SHOP, visitorSend } from "./helpers.ts";

// An embedded persona's anonymous visitors (issue 36 item 3): a guest token from an allowed origin
// only, a streamed chat that is a conversation of the owner's (read, listed, deleted by the owner),
// a stop button, replies spoken in the persona's voice; the token is good for nothing else.

let service: TestService;
let model: ScriptedModel;
let owner: TestUser;
let stranger: TestUser;

beforeAll(async () => {
  model = new ScriptedModel();
  service = await startTestService({ providers: { llm: model }, env: { DEFAULT_PLAN: "creator" } });
  [owner, stranger] = [await registerUser(service), await registerUser(service)];
}, 60_000);

afterAll(async () => {
  await service?.close();
});

const transcript = (personaId: string, token: string, origin = SHOP) =>
  service.api.GET("/v1/embed/{persona_id}/conversation", { params: { path: { persona_id: personaId } }, headers: fromChatPage(service, origin, token) });

describe("an embed visitor", () => {
  it("chats with the persona: a streamed reply in a conversation of the owner's, read back on return, listed and deletable by the owner", async () => {
    const persona = await embeddedPersona(service, owner);
    const token = await newVisitor(service, persona.id);
    expect(await expectOk(transcript(persona.id, token))).toEqual({ conversation_id: null, data: [] });

    model.next({ chunks: ["We ship ", "to **Norway**."] });
    const answer = await visitorSend(service, persona.id, token, "Do you ship to Norway?");
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = await readIdEvents(answer);
    expect(events.map((event) => event.event)).toEqual(["start", "delta", "delta", "done"]);
    expect(contentOf(events)).toBe("We ship to **Norway**.");

    const read = await expectOk(transcript(persona.id, token));
    expect(read.data.map((message) => [message.role, message.content])).toEqual([
      ["user", "Do you ship to Norway?"],
      ["assistant", "We ship to **Norway**."],
    ]);
    const conversationId = read.conversation_id!;

    // The owner's: listed for the persona, read and deleted with the ordinary conversation operations.
    const owned = service.clientFor(owner);
    const listed = await expectOk(owned.GET("/v1/personas/{id}/embed/conversations", { params: { path: { id: persona.id } } }));
    expect(listed).toMatchObject({ total: 1, has_more: false, data: [{ conversation_id: conversationId, guest_id: expect.any(String), visitor_messages: 1 }] });
    const messages = await expectOk(owned.GET("/v1/conversations/{id}/messages", { params: { path: { id: conversationId } } }));
    expect(messages.data.map((message) => message.content)).toContain("Do you ship to Norway?");
    const conversation = await expectOk(owned.GET("/v1/conversations/{id}", { params: { path: { id: conversationId } } }));
    expect(conversation).toMatchObject({ persona_id: persona.id, title: "Visitor on shop.example" });
    await expectApiError(service.clientFor(stranger).GET("/v1/conversations/{id}", { params: { path: { id: conversationId } } }), 404, "not_found");

    await expectOk(owned.DELETE("/v1/conversations/{id}", { params: { path: { id: conversationId } } }));
    expect(await expectOk(owned.GET("/v1/personas/{id}/embed/conversations", { params: { path: { id: persona.id } } }))).toMatchObject({ total: 0, data: [] });
    expect(await expectOk(transcript(persona.id, token))).toEqual({ conversation_id: null, data: [] });
    // The visitor's next message starts a new one.
    const again = await visitorSend(service, persona.id, token, "Hello again");
    expect((await readIdEvents(again)).at(-1)?.event).toBe("done");
    expect((await expectOk(transcript(persona.id, token))).conversation_id).not.toBe(conversationId);
  });

  it("gets a token only from an allowed origin: the chat page's embedding page, or a page of the origin itself", async () => {
    const persona = await embeddedPersona(service, owner);
    const create = (headers: Record<string, string>) => service.api.POST("/v1/embed/{persona_id}/guests", { params: { path: { persona_id: persona.id } }, headers });
    await expectOk(create(fromChatPage(service, SHOP)), 201);
    await expectOk(create({ origin: SHOP }), 201);
    await expectApiError(create(fromChatPage(service, OTHER_SITE)), 403, "forbidden");
    await expectApiError(create({ origin: OTHER_SITE }), 403, "forbidden");
    // A page of another origin cannot name an allowed one: only the chat page's own requests are asked where they are framed.
    await expectApiError(create({ origin: OTHER_SITE, "x-embed-origin": SHOP }), 403, "forbidden");
    await expectApiError(create({}), 403, "forbidden");
    await expectApiError(create({ origin: new URL(service.url).origin }), 403, "forbidden");

    const token = await newVisitor(service, persona.id);
    await expectApiError(transcript(persona.id, token, OTHER_SITE), 403, "forbidden");
    const refused = await visitorSend(service, persona.id, token, "Hi", { "x-embed-origin": OTHER_SITE });
    expect(refused.status).toBe(403);
    // The chat page's same-origin reads carry no Origin; the browser's Sec-Fetch-Site says where they come from.
    await expectOk(service.api.GET("/v1/embed/{persona_id}/conversation", {
      params: { path: { persona_id: persona.id } },
      headers: { "sec-fetch-site": "same-origin", "x-embed-origin": SHOP, "x-embed-guest": token },
    }));
    await expectApiError(service.api.GET("/v1/embed/{persona_id}/conversation", {
      params: { path: { persona_id: persona.id } },
      headers: { "sec-fetch-site": "cross-site", "x-embed-origin": SHOP, "x-embed-guest": token },
    }), 403, "forbidden");
  });

  it("holds a token that chats with its persona only: another persona's guest operations and every operation of the API refuse it", async () => {
    const persona = await embeddedPersona(service, owner);
    const other = await embeddedPersona(service, owner);
    const token = await newVisitor(service, persona.id);
    await expectApiError(transcript(other.id, token), 401, "unauthorized");
    expect((await visitorSend(service, other.id, token, "Hi")).status).toBe(401);
    await expectApiError(transcript(persona.id, `eg_${"A".repeat(43)}`), 401, "unauthorized");
    await expectApiError(service.api.GET("/v1/embed/{persona_id}/conversation", { params: { path: { persona_id: persona.id } }, headers: fromChatPage(service, SHOP) }), 401, "unauthorized");

    // Every operation that needs a credential, with the token every way a credential is sent.
    const wrong: string[] = [];
    const id = "0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01";
    const secured = operations.filter((candidate) => candidate.scope);
    const tryOne = async (op: (typeof secured)[number]) => {
      const path = op.path.replace(/\{[^}]+\}/g, id);
      const ways: Record<string, string>[] = [{ authorization: `Bearer ${token}` }, { "x-api-key": token }, fromChatPage(service, SHOP, token)];
      for (const headers of ways) {
        const answer = await sendRaw(service, op.method, path, { headers, ...(op.method === "GET" || op.method === "DELETE" ? {} : { body: {} }) });
        if (answer.status !== 401) wrong.push(`${op.method} ${op.path} with ${Object.keys(headers).join(", ")}: ${answer.status}`);
        await answer.arrayBuffer();
      }
    };
    // One at a time: a service answers an operation's first response only after compiling its
    // response schemas (VALIDATE_RESPONSES), seconds on a loaded machine, and the test's client
    // shares the event loop; a keep-alive connection left idle meanwhile may be closed by the server
    // just as the client reuses it.
    for (const op of secured) await tryOne(op);
    expect(secured.length).toBeGreaterThan(100);
    expect(wrong).toEqual([]);
  });

  it("stops a reply with the stop button, keeping what was said; another visitor cannot stop it", async () => {
    const persona = await embeddedPersona(service, owner);
    const token = await newVisitor(service, persona.id);
    const intruder = await newVisitor(service, persona.id);
    model.next({ chunks: ["Let me ", "think"], holdUntilAborted: true });
    const answer = await visitorSend(service, persona.id, token, "Tell me a long story");
    let seen: Awaited<ReturnType<typeof readIdEvents>> = [];
    const reading = readIdEvents(answer, (events) => {
      seen = [...events];
      return false;
    });
    await until("two deltas", () => seen.filter((event) => event.event === "delta").length >= 2);
    const generationId = generationOf(seen);
    const stop = (guest: string) =>
      service.api.POST("/v1/embed/{persona_id}/generations/{generation_id}/stop", { params: { path: { persona_id: persona.id, generation_id: generationId } }, headers: fromChatPage(service, SHOP, guest) });
    await expectApiError(stop(intruder), 404, "not_found");
    expect(await expectOk(stop(token))).toMatchObject({ id: generationId, status: "stopped" });
    const events = await reading;
    expect(events.at(-1)).toMatchObject({ event: "done" });
    expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ stopped: true });
    const read = await expectOk(transcript(persona.id, token));
    expect(read.data.at(-1)).toMatchObject({ role: "assistant", content: "Let me think", stopped: true });
  });

  it("is named to the persona as a visitor, never as the owner whose conversation it is", async () => {
    const persona = await embeddedPersona(service, owner, [SHOP], { instructions: "You are a shop assistant. Call the customer {{user}}." });
    const token = await newVisitor(service, persona.id);
    const asked = model.requests.length;
    await readIdEvents(await visitorSend(service, persona.id, token, "Hello"));
    const request = model.requests.slice(asked).find((candidate) => candidate.messages.some((turn) => turn.role === "system" && String(turn.content).includes("shop assistant")));
    const instructions = String(request?.messages.find((turn) => turn.role === "system")?.content);
    expect(instructions).toContain("Call the customer Visitor.");
    expect(instructions).not.toContain(owner.username);
  });

  it("hears the persona's own replies in its voice, and nothing else", async () => {
    const persona = await embeddedPersona(service, owner, [SHOP], { voice_id: "nova" });
    const token = await newVisitor(service, persona.id);
    model.next({ chunks: ["Welcome to the **shop**!"] });
    await readIdEvents(await visitorSend(service, persona.id, token, "Hello"));
    const { data } = await expectOk(transcript(persona.id, token));
    const [question, reply] = data;
    const speak = (messageId: string, guest = token) =>
      sendRaw(service, "POST", `/v1/embed/${persona.id}/speech`, { headers: fromChatPage(service, SHOP, guest), body: { message_id: messageId } });
    const spoken = await speak(reply!.id);
    expect(spoken.status).toBe(200);
    expect(spoken.headers.get("content-type")).toBe("audio/mpeg");
    expect((await spoken.arrayBuffer()).byteLength).toBeGreaterThan(100);
    // The visitor's own message is no reply of the persona; another visitor's reply is not theirs.
    expect((await speak(question!.id)).status).toBe(404);
    expect((await speak(reply!.id, await newVisitor(service, persona.id))).status).toBe(404);
  });
});
