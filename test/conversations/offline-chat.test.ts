import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConversation, createPersona, readEvents, sendBlocking, sendStream } from "../support/chat.ts";
import { eventually } from "../support/wait.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// The embedded default needs no model provider: the offline local model answers, in pieces.
let service: TestService;
let user: TestUser;

beforeAll(async () => {
  service = await startTestService();
  user = await registerUser(service);
});

afterAll(async () => {
  await service?.close();
});

describe("chat on the offline default", () => {
  it("replies from the persona, blocking and streamed, and labels the model as local", async () => {
    const persona = await createPersona(service, user, { name: "Captain Nova", instructions: "You are Captain Nova, a retired starship captain." });
    expect(persona.model).toBe("local-offline-v1");
    const conversation = await createConversation(service, user, persona.id);
    const blocking = await (await sendBlocking(service, user, conversation.id, "Which planet is the evening star?")).json();
    expect(blocking.assistant_message.content).toMatch(/Nova/);
    const { events } = await readEvents(await sendStream(service, user, conversation.id, "Tell me more about it"));
    const deltas = events.filter((e) => e.event === "delta");
    expect(deltas.length).toBeGreaterThan(1);
    expect(events.at(-1)!.event).toBe("done");
    // Replies, not the greeting (depth 0), which no model wrote for this conversation.
    const stored = await service.services.db.knex("messages").where({ conversation_id: conversation.id, role: "assistant" }).where("depth", ">", 0);
    expect(stored).toHaveLength(2);
    expect(stored.every((m) => m.model === "local-offline-v1")).toBe(true);
    const titled = await eventually(async () => {
      const body = await (await service.fetch(`/v1/conversations/${conversation.id}`, { headers: user.auth })).json();
      return body.title ? body.title : undefined;
    });
    expect(titled.length).toBeGreaterThan(0);
  });
});
