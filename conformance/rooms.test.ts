import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { contract } from "../test/support/contract.ts";
import { createPersona, registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { idOr } from "./support/placeholders.ts";
import { schemaErrors } from "../test/support/schema.ts";
import { parseSse } from "../test/support/sse.ts";
import { target } from "./support/target.ts";

// The data of each room event, by event name (the contract declares them as named schemas).
const EVENT_SCHEMAS: Record<string, string> = {
  message: "RoomMessage",
  delta: "RoomEventDelta",
  member_joined: "RoomMember",
  member_left: "RoomEventMemberLeft",
  persona_added: "RoomPersona",
  persona_removed: "RoomEventPersonaRemoved",
  closed: "RoomEventClosed",
};

describe("rooms", () => {
  let owner: TestUser;
  let member: TestUser;
  let personaId: string | undefined;
  let roomId: string | undefined;

  beforeAll(async () => {
    [owner, member] = await Promise.all([registerUser("host"), registerUser("guest")]);
    personaId = await createPersona(owner);
  });

  op("rooms_create", async () => {
    const json = { name: "Stargazers' Club", description: "Friday-night sky watching with Captain Nova.", is_public: false };
    const answer = await call("rooms_create", { token: owner.token, json, headers: { "idempotency-key": randomUUID() }, expect: [201] });
    roomId = (answer.json as { id: string }).id;
    if (target.stateful) expect(answer.json).toMatchObject({ name: json.name, owner_id: owner.id });
  });

  op("rooms_list", async () => {
    const answer = await call("rooms_list", { token: owner.token, query: { limit: 10 }, expect: [200] });
    if (target.stateful && roomId) expect(JSON.stringify(answer.json)).toContain(roomId);
  });

  op("rooms_get", async () => {
    await call("rooms_get", { token: owner.token, path: { id: idOr(roomId) }, expect: [200] });
    // A private room is hidden from anyone not in it.
    if (target.stateful && roomId) await call("rooms_get", { token: member.token, path: { id: roomId }, expect: [404] });
  });

  op("rooms_update", async () => {
    await call("rooms_update", { token: owner.token, path: { id: idOr(roomId) }, json: { name: "Stargazers' Club (Fridays)" }, expect: [200] });
  });

  op("rooms_add_member", async () => {
    await call("rooms_add_member", { token: owner.token, path: { id: idOr(roomId) }, json: { user_id: member.id }, expect: [200] });
  });

  op("rooms_add_persona", async () => {
    await call("rooms_add_persona", { token: owner.token, path: { id: idOr(roomId) }, json: { persona_id: idOr(personaId) }, expect: [200] });
  });

  op("rooms_send_message", async () => {
    const json = { content: "Captain Nova, which planet is the bright one low in the west tonight?" };
    const answer = await call("rooms_send_message", { token: member.token, path: { id: idOr(roomId) }, json, headers: { "idempotency-key": randomUUID() }, expect: [201] });
    // The room's one persona answers a message that names no one.
    if (target.stateful && personaId) expect((answer.json as { persona_responses: { persona_id: string }[] }).persona_responses.map((r) => r.persona_id)).toEqual([personaId]);
  }, 60_000);

  op("rooms_list_messages", async () => {
    const answer = await call("rooms_list_messages", { token: member.token, path: { id: idOr(roomId) }, query: { limit: 20 }, expect: [200] });
    if (target.stateful && roomId) expect((answer.json as { data: { sender: { type: string } }[] }).data.map((m) => m.sender.type)).toEqual(["persona", "user"]);
  });

  op("rooms_remove_persona", async () => {
    await call("rooms_remove_persona", { token: owner.token, path: { id: idOr(roomId), persona_id: idOr(personaId) }, expect: [200] });
  });

  op("rooms_events", async () => {
    // The stream never ends by itself: it replays the room's stored events (from Last-Event-ID 0),
    // then the member is removed, which ends it with `closed`; the member is added back after.
    const live = target.stateful && roomId !== undefined;
    const path = { id: idOr(roomId) };
    const answer = await call("rooms_events", {
      token: member.token,
      path,
      headers: { "last-event-id": "0" },
      expect: [200],
      whileStreaming: async () => {
        if (live) await call("rooms_remove_member", { token: owner.token, path: { id: roomId!, user_id: member.id }, expect: [200] });
      },
    });
    if (answer.status !== 200) return;
    expect(answer.contentType).toBe("text/event-stream");
    const { events } = parseSse(answer.text);
    expect(events.length).toBeGreaterThan(0);
    for (const event of events) {
      const schema = EVENT_SCHEMAS[event.event];
      expect(schema, `unexpected room event ${event.event}`).toBeDefined();
      expect(schemaErrors(contract.components.schemas[schema!]!, JSON.parse(event.data)), `${event.event} event ${event.data}`).toEqual([]);
    }
    if (!live) return;
    // Replayed in order: the member joining, the persona added, the message and its reply, the
    // persona taken out; then the member's removal, told, and the end.
    expect(events.map((event) => event.event)).toEqual(["member_joined", "persona_added", "message", "message", "persona_removed", "member_left", "closed"]);
    expect(JSON.parse(events.at(-1)!.data)).toEqual({ reason: "removed" });
    await call("rooms_add_member", { token: owner.token, path: { id: roomId! }, json: { user_id: member.id }, expect: [200] });
  }, 60_000);

  op("rooms_remove_member", async () => {
    await call("rooms_remove_member", { token: owner.token, path: { id: idOr(roomId), user_id: member.id }, expect: [200] });
  });

  op("rooms_delete", async () => {
    await call("rooms_delete", { token: owner.token, path: { id: idOr(roomId) }, expect: [200] });
  });
});
