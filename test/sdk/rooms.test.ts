// The SDK's rooms helpers against the real service (offline model).
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ConflictError, createClient, PermissionDeniedError, NotFoundError } from "../../sdk/src/index.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ env: { AUTO_AVATARS: "false" } });
});
afterAll(async () => {
  await service?.close();
});

describe("client.rooms", () => {
  test("creates a room, adds a member and a persona, sends, pages history, leaves and deletes", { timeout: 120_000 }, async () => {
    const [owner, guest] = [await registerUser(service), await registerUser(service)];
    const client = createClient({ baseUrl: service.url, accessToken: owner.accessToken, refreshToken: owner.refreshToken });
    const guestClient = createClient({ baseUrl: service.url, accessToken: guest.accessToken, refreshToken: guest.refreshToken });
    const persona = await client.personas.create({ name: "Nova", instructions: "Be brief.", greeting_message: "Hi." });

    const room = await client.rooms.create({ name: "Stargazers" });
    expect(room).toMatchObject({ name: "Stargazers", owner_id: owner.id, personas: [] });
    expect(await client.rooms.addMember(room.id, guest.id)).toMatchObject({ user_id: guest.id, role: "member" });
    await expect(client.rooms.addMember(room.id, guest.id)).rejects.toBeInstanceOf(ConflictError);
    expect(await client.rooms.addPersona(room.id, persona.id)).toMatchObject({ persona_id: persona.id, name: "Nova" });

    const sent = await guestClient.rooms.send(room.id, { content: "@nova hello" }, { idempotencyKey: "sdk-rooms-1" });
    expect(sent.persona_responses.map((reply) => reply.persona_name)).toEqual(["Nova"]);
    const contents: string[] = [];
    for await (const message of client.rooms.messages(room.id, { limit: 1 })) contents.push(message.content);
    expect(contents).toEqual([sent.persona_responses[0]!.content, "@nova hello"]);
    expect((await client.rooms.list()).data.map((item) => item.id)).toEqual([room.id]);

    await expect(guestClient.rooms.update(room.id, { name: "mine" })).rejects.toBeInstanceOf(PermissionDeniedError);
    expect(await client.rooms.update(room.id, { name: "Renamed" })).toMatchObject({ name: "Renamed" });
    expect(await client.rooms.removePersona(room.id, persona.id)).toMatchObject({ deleted: true });
    expect(await guestClient.rooms.removeMember(room.id, guest.id)).toMatchObject({ deleted: true });
    await expect(guestClient.rooms.get(room.id)).rejects.toBeInstanceOf(NotFoundError);
    expect(await client.rooms.delete(room.id)).toEqual({ id: room.id, deleted: true });
  });
});
