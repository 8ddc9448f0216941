import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonHeaders, startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";
import { runCli } from "./run-cli.ts";
import { terminal, tmuxInstalled } from "./tmux.ts";

// `persona room <id>`: the room's events live in the terminal, lines typed sent as messages.
// Driven the way a person uses it (tmux: keys typed with send-keys, the screen read back with
// capture-pane) and the way a script does (lines piped on stdin, plain and --json).
const { start, waitForScreen: waitFor, type, kill } = terminal("persona-room-test", "room");
// Replies pass through the room's events: a little more time than a one-to-one chat.
const waitForScreen = (test: (text: string) => boolean, what: string, timeoutMs = 30_000) => waitFor(test, what, timeoutMs);

let service: TestService;
let owner: TestUser;
let guest: TestUser;
let guestEnv: Record<string, string>;

async function api(user: TestUser, method: string, path: string, body?: unknown) {
  const response = await service.fetch(path, { method, headers: { ...user.auth, ...(body ? jsonHeaders : {}) }, body: body ? JSON.stringify(body) : undefined });
  const json = await response.json();
  expect(response.status, JSON.stringify(json)).toBeLessThan(300);
  return json;
}

/** A room of the owner with the persona Orion and the guest as a member. */
async function roomWithOrion(name: string): Promise<{ id: string; personaId: string }> {
  const persona = await api(owner, "POST", "/v1/personas", { name: "Orion", instructions: "You are a stargazing guide.", greeting_message: "Clear skies!" });
  const room = await api(owner, "POST", "/v1/rooms", { name, persona_ids: [persona.id] });
  await api(owner, "POST", `/v1/rooms/${room.id}/members`, { user_id: guest.id });
  return { id: room.id, personaId: persona.id };
}

beforeAll(async () => {
  service = await startTestService({ env: { AUTO_AVATARS: "false" } });
  owner = await registerUser(service, { username: "olga_room" });
  guest = await registerUser(service, { username: "mira_room" });
  await service.services.db.knex("users").where({ id: owner.id }).update({ plan: "creator" });
  guestEnv = { PERSONA_BASE_URL: service.url, PERSONA_API_KEY: await apiKeyFor(service, guest) };
});

afterAll(async () => {
  kill();
  await service?.close();
});

describe("persona room, piped", { timeout: 180_000 }, () => {
  it("shows the history, sends each line and prints the replies before it ends", async () => {
    const room = await roomWithOrion("Piped");
    await api(owner, "POST", `/v1/rooms/${room.id}/messages`, { content: "@Orion first light?" });
    const result = await runCli(["room", room.id], { env: guestEnv, input: "@Orion which star is that?\n" });
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.split("\n");
    expect(lines[0]).toBe(`Room Piped (${room.id}): 2 members; personas: Orion.`);
    expect(lines[1]).toBe("olga_room> @Orion first light?");
    expect(lines[2]).toMatch(/^Orion> \S/);
    const asked = lines.indexOf("you> @Orion which star is that?");
    expect(asked).toBeGreaterThan(2);
    // The reply, streamed after the line was sent (written as it came, then the line ended).
    expect(lines[asked + 1]).toMatch(/^Orion> \S/);
    const history = await api(owner, "GET", `/v1/rooms/${room.id}/messages`);
    expect(lines[asked + 1]).toBe(`Orion> ${history.data[0].content}`);
  });

  it("prints every event as one JSON line with --json; /exit leaves at once", async () => {
    const room = await roomWithOrion("Scripted");
    const result = await runCli(["room", room.id, "--json"], { env: guestEnv, input: "@Orion hello\n" });
    expect(result.code, result.stderr).toBe(0);
    const events = result.stdout.trim().split("\n").map((line) => JSON.parse(line));
    expect(events[0]).toEqual({ type: "room", room_id: room.id, name: "Scripted" });
    const messages = events.filter((event) => event.type === "message");
    expect(messages.map((event) => [event.data.sender.name, event.data.content.length > 0])).toEqual([
      ["mira_room", true],
      ["Orion", true],
    ]);
    expect(messages.every((event) => /^[0-9]+$/.test(event.id))).toBe(true);
    expect(events.some((event) => event.type === "delta" && event.data.persona_name === "Orion")).toBe(true);

    // /exit leaves at once: nothing after it is sent.
    const left = await runCli(["room", room.id], { env: guestEnv, input: "/exit\nnever sent\n" });
    expect(left.code, left.stderr).toBe(0);
    expect((await api(owner, "GET", `/v1/rooms/${room.id}/messages`)).total).toBe(2);
  });

  it("fails like every command for a room it may not see", async () => {
    const room = await roomWithOrion("Hidden");
    const stranger = await registerUser(service);
    const result = await runCli(["room", room.id], { env: { PERSONA_BASE_URL: service.url, PERSONA_API_KEY: await apiKeyFor(service, stranger) } });
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(/^persona: .*not found/im);
  });
});

describe.skipIf(!tmuxInstalled)(`persona room in a terminal${tmuxInstalled ? "" : " (skipped: tmux is not installed)"}`, { timeout: 180_000 }, () => {
  it("prints others' messages and replies live, sends what is typed, and ends when the member is removed", async () => {
    const room = await roomWithOrion("Terminal");
    const started = start(["room", room.id], guestEnv, { x: 160, y: 50 });
    expect(started.status, started.stderr).toBe(0);
    let text = await waitForScreen((t) => /^you> $/m.test(t), "the prompt");
    expect(text).toContain(`Room Terminal (${room.id}): 2 members; personas: Orion.`);

    // Someone else speaks: the message and Orion's reply appear without a key pressed.
    await api(owner, "POST", `/v1/rooms/${room.id}/messages`, { content: "Anyone out tonight?" });
    text = await waitForScreen((t) => /^olga_room> Anyone out tonight\?\nOrion> \S.*\nyou> $/m.test(t), "the owner's message and the reply");

    // What is typed is sent; the reply follows and a new prompt with it.
    type("@Orion which planet is low in the west?");
    text = await waitForScreen((t) => /^you> @Orion which planet is low in the west\?\nOrion> \S.*\n(\n)*you> $/m.test(t), "the reply to the typed line");

    // People and personas coming and going.
    const quill = await api(owner, "POST", "/v1/personas", { name: "Quill", instructions: "You write poems.", greeting_message: "Hello." });
    await api(owner, "POST", `/v1/rooms/${room.id}/personas`, { persona_id: quill.id });
    text = await waitForScreen((t) => t.includes("* Quill (persona) joined the room"), "the persona joining");

    // Removed by the owner: told so, and the command ends.
    await api(owner, "DELETE", `/v1/rooms/${room.id}/members/${guest.id}`);
    text = await waitForScreen((t) => t.includes("[exit "), "the session to end");
    expect(text).toContain("* you left the room");
    expect(text).toContain("* You are no longer a member of this room.");
    expect(text).toContain("[exit 0]");
    // What the screen showed was really stored.
    const history = await api(owner, "GET", `/v1/rooms/${room.id}/messages`);
    expect(history.data.map((m: { sender: { name: string } }) => m.sender.name)).toEqual(["Orion", "mira_room", "Orion", "olga_room"]);
  });
});
