import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAndWait, type RunningProcess } from "../support/processes.ts";
import { freePort } from "../support/ports.ts";
import { createTestDatabase, databaseKind, databaseSettings, jsonHeaders, startTestService, type TestDatabase, type TestService } from "../support/service.ts";
import { readEvents, type EventReader } from "./event-reader.ts";

// Fan-out across API processes: on PostgreSQL two real server processes (`node server/main.ts`) on
// one database, each with its own LISTEN connection; a message sent through one reaches the
// subscribers of the other, and a subscriber that reconnects to the other process with
// Last-Event-ID loses nothing. The embedded default is one process: the same flow runs there with
// both "sides" on that process. The replies come from the offline model, as in production.
const processes: RunningProcess[] = [];
let database: TestDatabase | undefined;
let embedded: TestService | undefined;
/** Where the two sides are reached. */
let sideA: string;
let sideB: string;
const readers: EventReader[] = [];

async function serverProcess(databaseUrl: string, worker: boolean): Promise<string> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const running = await startAndWait("node", ["server/main.ts"], `${url}/healthz`, 120_000, {
    PORT: String(port),
    HOST: "127.0.0.1",
    ...databaseSettings(databaseUrl),
    LOG_LEVEL: "warn",
    WORKER_ENABLED: String(worker),
    AUTO_AVATARS: "false",
    RATE_LIMIT_PER_MINUTE: "100000",
    AUTH_ATTEMPTS_PER_IP: "100000",
    AUTH_ATTEMPTS_PER_EMAIL: "100000",
  });
  processes.push(running);
  // The port answers 503 while the process starts; /readyz says when it serves.
  const deadline = Date.now() + 120_000;
  while ((await fetch(`${url}/readyz`).then((response) => response.status, () => 0)) !== 200) {
    if (Date.now() > deadline) throw new Error(`${url} did not become ready:\n${running.output()}`);
    await new Promise((wait) => setTimeout(wait, 200));
  }
  return url;
}

beforeAll(async () => {
  if (databaseKind === "postgres") {
    database = await createTestDatabase();
    // One after the other: the first runs the migrations.
    sideA = await serverProcess(database.url!, true);
    sideB = await serverProcess(database.url!, false);
  } else {
    embedded = await startTestService({ env: { AUTO_AVATARS: "false", RATE_LIMIT_PER_MINUTE: "100000" } });
    sideA = sideB = embedded.url;
  }
}, 300_000);

afterAll(async () => {
  for (const reader of readers) reader.close();
  for (const running of processes) await running.stop();
  await embedded?.close();
  await database?.drop();
});

interface User {
  id: string;
  auth: Record<string, string>;
}

async function api(base: string, user: User | undefined, method: string, path: string, status: number, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { ...(user?.auth ?? {}), ...(body === undefined ? {} : jsonHeaders) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  expect(response.status, text).toBe(status);
  return text ? JSON.parse(text) : undefined;
}

async function register(base: string, name: string): Promise<User> {
  const suffix = Math.random().toString(36).slice(2, 8);
  const body = await api(base, undefined, "POST", "/v1/auth/register", 201, { email: `${name}_${suffix}@example.com`, username: `${name}_${suffix}`, password: "Correct-horse-9" });
  return { id: body.user.id, auth: { authorization: `Bearer ${body.access_token}` } };
}

async function open(base: string, user: User, roomId: string, lastEventId?: string) {
  const reader = await readEvents(base, roomId, user.auth, lastEventId);
  expect(reader.status).toBe(200);
  readers.push(reader);
  return reader;
}

describe(`room events across API processes (${databaseKind}: ${databaseKind === "postgres" ? "two processes, one database" : "one process"})`, { timeout: 180_000 }, () => {
  it("a message sent through one process reaches the subscribers of the other; a reconnect to either loses nothing", async () => {
    const [owner, member] = [await register(sideA, "olga"), await register(sideB, "mira")];
    const persona = await api(sideA, owner, "POST", "/v1/personas", 201, { name: "Captain Nova", instructions: "You are Captain Nova.", greeting_message: "Hi.", is_public: true });
    const room = await api(sideA, owner, "POST", "/v1/rooms", 201, { name: "Stargazers", persona_ids: [persona.id] });
    await api(sideA, owner, "POST", `/v1/rooms/${room.id}/members`, 200, { user_id: member.id });

    const onB = await open(sideB, member, room.id);
    const onA = await open(sideA, owner, room.id);
    const sent = await api(sideA, owner, "POST", `/v1/rooms/${room.id}/messages`, 201, { content: "Captain Nova, which planet is that?" });
    await onB.until(() => onB.stored("message").length === 2, "the message and the reply on the other process");
    expect(onB.stored("message").map((event) => event.data.id)).toEqual([sent.id, sent.persona_responses[0].id]);
    // The offline model streams: the reply was seen being written, between the two messages.
    const deltas = onB.events.filter((event) => event.event === "delta");
    expect(deltas.map((event) => event.data.content).join("")).toBe(sent.persona_responses[0].content);
    expect(onB.events[0]!.event).toBe("message");
    expect(onB.events.at(-1)!.event).toBe("message");

    // The other way round.
    const back = await api(sideB, member, "POST", `/v1/rooms/${room.id}/messages`, 201, { content: "@Captain Nova thanks!" });
    await onA.until(() => onA.stored("message").length === 4, "the member's message on the first process");
    expect(onA.stored("message").map((event) => event.data.id)).toEqual([sent.id, sent.persona_responses[0].id, back.id, back.persona_responses[0].id]);

    // The member's connection drops; two exchanges happen; it reconnects to the other process.
    await onB.until(() => onB.stored("message").length === 4, "the member's own exchange");
    const lastSeen = onB.stored().at(-1)!.id!;
    onB.close();
    const missed = [];
    for (const content of ["first while away", "second while away"]) missed.push(await api(sideA, owner, "POST", `/v1/rooms/${room.id}/messages`, 201, { content }));
    // The replies' deltas are live events relayed through notifications, which a busy machine may
    // deliver late: wait until the owner's stream has all four messages, which follow their deltas.
    await onA.until(() => onA.stored("message").length === 8, "the exchanges while the member was away");
    const resumed = await open(sideA, member, room.id, lastSeen);
    await resumed.until(() => resumed.stored("message").length === 4, "the missed messages");
    const missedIds = missed.flatMap((message) => [message.id, message.persona_responses[0].id]);
    expect(resumed.stored("message").map((event) => event.data.id)).toEqual(missedIds);
    // Replay carries stored events only: no deltas of what was missed.
    expect(resumed.events.filter((event) => event.event === "delta")).toEqual([]);
    // Every id the member saw, before and after the reconnect, once and in order, and no message missing.
    const seen = [...onB.stored(), ...resumed.stored()].map((event) => BigInt(event.id!));
    expect(seen.every((id, i) => i === 0 || id > seen[i - 1]!)).toBe(true);
    const history = await api(sideB, member, "GET", `/v1/rooms/${room.id}/messages?limit=50`, 200);
    expect([...onB.stored("message"), ...resumed.stored("message")].map((event) => event.data.id).sort()).toEqual(history.data.map((m: { id: string }) => m.id).sort());

    // Removed through one process, the member's stream on the other is closed.
    const watching = await open(sideB, member, room.id);
    await api(sideA, owner, "DELETE", `/v1/rooms/${room.id}/members/${member.id}`, 200);
    await watching.ended;
    expect(watching.events.map((event) => event.event)).toEqual(["member_left", "closed"]);
    expect(watching.events.at(-1)!.data).toEqual({ reason: "removed" });
  });
});
