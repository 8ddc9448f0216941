import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect } from "vitest";
import { CHAT_STREAM_EVENT_SCHEMAS as EVENT_SCHEMAS } from "./support/chat-events.ts";
import { call } from "./support/client.ts";
import { contract } from "../test/support/contract.ts";
import { createPersona, registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { idOr } from "./support/placeholders.ts";
import { schemaErrors } from "../test/support/schema.ts";
import { parseSse } from "../test/support/sse.ts";
import { target } from "./support/target.ts";


describe("conversations", () => {
  let user: TestUser;
  let personaId: string | undefined;
  let conversationId: string | undefined;
  let generationId: string | undefined;

  beforeAll(async () => {
    user = await registerUser("chat");
    personaId = await createPersona(user);
  });

  op("conversations_create", async () => {
    const json = { persona_id: idOr(personaId), title: "The bright planet in the west" };
    const answer = await call("conversations_create", { token: user.token, json, expect: [201] });
    conversationId = (answer.json as { id: string }).id;
    if (target.stateful) expect(answer.json).toMatchObject({ persona_id: personaId, message_count: 0 });
  });

  op("conversations_list", async () => {
    const answer = await call("conversations_list", { token: user.token, query: { persona_id: personaId, limit: 10 }, expect: [200] });
    if (target.stateful && conversationId) expect((answer.json as { data: { id: string }[] }).data.map((c) => c.id)).toContain(conversationId);
  });

  op("conversations_send_message", async () => {
    const json = { content: "Which planet is the bright one low in the west after sunset?" };
    const headers = { "idempotency-key": randomUUID() };
    await call("conversations_send_message", { token: user.token, path: { id: idOr(conversationId) }, json, headers, expect: [201] });
  }, 60_000);

  op("conversations_stream_message", async () => {
    const answer = await call("conversations_stream_message", {
      token: user.token,
      path: { id: idOr(conversationId) },
      json: { content: "Say hello to the crew!" },
      expect: [200],
    });
    if (answer.status !== 200) return;
    expect(answer.contentType).toBe("text/event-stream");
    const { events } = parseSse(answer.text);
    expect(events.length).toBeGreaterThan(0);
    for (const event of events) {
      const schema = EVENT_SCHEMAS[event.event];
      expect(schema, `unexpected stream event ${event.event}`).toBeDefined();
      expect(schemaErrors(contract.components.schemas[schema!]!, JSON.parse(event.data)), `${event.event} event ${event.data}`).toEqual([]);
    }
    // A stream ends with exactly one done or error event; the offline model does not fail.
    expect(events.at(-1)!.event).toBe("done");
    // Issue 21: it opens with `start`, naming the generation to resume or stop.
    if (events[0]!.event === "start") generationId = (JSON.parse(events[0]!.data) as { generation_id: string }).generation_id;
    expect(events.slice(1, -1).every((e) => e.event === "delta")).toBe(true);
  }, 60_000);

  op("conversation_generations_get", async () => {
    const answer = await call("conversation_generations_get", { token: user.token, path: { id: idOr(conversationId), generation_id: idOr(generationId) }, expect: [200] });
    if (target.stateful) expect(answer.json).toMatchObject({ id: generationId, conversation_id: conversationId, status: "done" });
  });

  op("conversation_generations_stream", async () => {
    const answer = await call("conversation_generations_stream", {
      token: user.token,
      path: { id: idOr(conversationId), generation_id: idOr(generationId) },
      headers: { "last-event-id": "1" },
      expect: [200],
    });
    if (answer.status !== 200) return;
    expect(answer.contentType).toBe("text/event-stream");
    const { events } = parseSse(answer.text);
    for (const event of events) expect(schemaErrors(contract.components.schemas[EVENT_SCHEMAS[event.event]!]!, JSON.parse(event.data))).toEqual([]);
    // A finished generation replays the events after the given id, up to its end.
    if (target.stateful) expect(events.at(-1)!.event).toBe("done");
  });

  op("conversation_generations_stop", async () => {
    const answer = await call("conversation_generations_stop", { token: user.token, path: { id: idOr(conversationId), generation_id: idOr(generationId) }, expect: [200] });
    // Stopping a finished generation is harmless: 200 with its final state.
    if (target.stateful) expect(answer.json).toMatchObject({ id: generationId, status: "done" });
  });

  op("conversations_list_messages", async () => {
    const answer = await call("conversations_list_messages", { token: user.token, path: { id: idOr(conversationId) }, query: { limit: 20 }, expect: [200] });
    // The greeting the conversation opened with, then two exchanges.
    if (target.stateful) expect((answer.json as { data: unknown[] }).data.length).toBe(5);
  });

  op("conversations_get", async () => {
    const answer = await call("conversations_get", { token: user.token, path: { id: idOr(conversationId) }, expect: [200] });
    if (target.stateful) expect(answer.json).toMatchObject({ id: conversationId, message_count: 4 });
  });

  op("conversations_search", async () => {
    await call("conversations_search", { token: user.token, query: { q: "planet", limit: 5 }, expect: [200] });
  });

  op("conversations_delete", async () => {
    await call("conversations_delete", { token: user.token, path: { id: idOr(conversationId) }, expect: [200] });
  });
});
