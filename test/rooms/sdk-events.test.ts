import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, NotFoundError, PermissionDeniedError, type PersonaClient, type RoomEvent, type RoomEventStream } from "../../sdk/src/index.ts";
import { roomHub } from "../../server/areas/rooms/hub.ts";
import { startTestService, type TestService } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";
import { addMember, call, creator, makeRoom, serviceEnv } from "./helpers.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";

// The SDK's room event iterator against the real service, through a TCP proxy the test can cut:
// it reconnects by itself with Last-Event-ID and loses nothing, ends on `closed`, throws what
// reconnecting cannot cure, and stops quietly when asked.
let service: TestService;
let proxy: TcpProxy;
let owner: TestUser;
let member: TestUser;
let outsider: TestUser;

beforeAll(async () => {
  service = await startTestService({ env: serviceEnv });
  proxy = await startTcpProxy(service.url);
  [owner, member, outsider] = [await creator(service, "olga"), await creator(service, "mira"), await creator(service, "otto")];
});

afterAll(async () => {
  await proxy?.close();
  await service?.close();
});

/** A client of `user` through the proxy that records the Last-Event-ID of every events request. */
function clientOf(user: TestUser, sentIds: (string | null)[] = []): PersonaClient {
  return createClient(
    { baseUrl: proxy.url, accessToken: user.accessToken, refreshToken: user.refreshToken },
    {
      fetch: (request) => {
        if (new URL(request.url).pathname.endsWith("/events")) sentIds.push(request.headers.get("last-event-id"));
        return globalThis.fetch(request);
      },
    },
  );
}

/** Reads `stream` in the background into an array; `done` settles when the iteration ends. */
function collect(stream: RoomEventStream) {
  const events: RoomEvent[] = [];
  const done = (async () => {
    for await (const event of stream) events.push(event);
  })();
  done.catch(() => undefined);
  const until = async (test: () => boolean, what: string) => {
    const deadline = Date.now() + 30_000;
    while (!test()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(events)}`);
      await new Promise((wait) => setTimeout(wait, 20));
    }
  };
  return { events, done, until };
}

const post = (user: TestUser, roomId: string, content: string) => call(service, user, "POST", `/v1/rooms/${roomId}/messages`, 201, { content });
const messages = (events: RoomEvent[]) => events.flatMap((event) => (event.type === "message" ? [event.data.content] : []));

describe("client.rooms.events", () => {
  it("reconnects after a cut connection with Last-Event-ID, and loses nothing sent meanwhile", async () => {
    const room = await makeRoom(service, owner);
    await addMember(service, owner, room.id, member);
    const sentIds: (string | null)[] = [];
    const hub = roomHub(service.services);
    const subscribed = hub.size;
    const stream = clientOf(member, sentIds).rooms.events(room.id);
    const reader = collect(stream);
    // The stream starts with what happens next: send once it is subscribed.
    await reader.until(() => hub.size > subscribed, "the stream to be subscribed");
    await post(owner, room.id, "before");
    await reader.until(() => messages(reader.events).length === 1, "the first message");
    const seen = stream.lastEventId;
    expect(seen).toMatch(/^[0-9]+$/);

    // The network fails, and stays down while two messages are sent.
    proxy.refusing = true;
    proxy.cut();
    await post(owner, room.id, "while away 1");
    await post(member, room.id, "while away 2");
    proxy.refusing = false;

    await reader.until(() => messages(reader.events).length === 3, "the missed messages");
    await post(owner, room.id, "after");
    await reader.until(() => messages(reader.events).length === 4, "the next message");
    expect(messages(reader.events)).toEqual(["before", "while away 1", "while away 2", "after"]);
    expect(stream.reconnects).toBeGreaterThan(0);
    // The first request resumed nothing; every later one resumed after what had been received.
    expect(sentIds[0]).toBeNull();
    expect(sentIds.slice(1)).toContain(seen);
    expect(sentIds.slice(1).every((id) => id === seen)).toBe(true);
    stream.close();
    await reader.done;
  });

  it("ends after `closed` when the member is removed, and resumes from a saved id in a new stream", async () => {
    const room = await makeRoom(service, owner);
    await addMember(service, owner, room.id, member);
    const hub = roomHub(service.services);
    const subscribed = hub.size;
    const first = clientOf(member).rooms.events(room.id);
    const reader = collect(first);
    await reader.until(() => hub.size > subscribed, "the stream to be subscribed");
    await post(owner, room.id, "one");
    await reader.until(() => messages(reader.events).length === 1, "a message");
    // Stopped by its own signal: the iteration ends quietly.
    first.close();
    await reader.done;

    await post(owner, room.id, "two");
    const resumed = collect(clientOf(member).rooms.events(room.id, { lastEventId: first.lastEventId! }));
    await resumed.until(() => messages(resumed.events).length === 1, "the message after the saved id");
    await call(service, owner, "DELETE", `/v1/rooms/${room.id}/members/${member.id}`, 200);
    await resumed.done;
    expect(resumed.events.map((event) => event.type)).toEqual(["message", "member_left", "closed"]);
    expect(messages(resumed.events)).toEqual(["two"]);
    expect(resumed.events.at(-1)).toEqual({ type: "closed", data: { reason: "removed" } });
  });

  it("throws what reconnecting cannot cure: a hidden room, an onlooker of a public one", async () => {
    const hidden = await makeRoom(service, owner);
    const shown = await makeRoom(service, owner, { is_public: true });
    await expect(collect(clientOf(outsider).rooms.events(hidden.id)).done).rejects.toBeInstanceOf(NotFoundError);
    await expect(collect(clientOf(outsider).rooms.events(shown.id)).done).rejects.toBeInstanceOf(PermissionDeniedError);
  });

  it("stops when its signal aborts, even while waiting to reconnect", async () => {
    const room = await makeRoom(service, owner);
    const controller = new AbortController();
    proxy.refusing = true;
    try {
      const reader = collect(clientOf(owner).rooms.events(room.id, { signal: controller.signal }));
      await new Promise((wait) => setTimeout(wait, 300));
      controller.abort();
      await reader.done;
      expect(reader.events).toEqual([]);
    } finally {
      proxy.refusing = false;
    }
  });
});
