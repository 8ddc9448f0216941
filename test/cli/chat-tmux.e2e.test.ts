import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";
import { chatterWithPersona, terminal, tmuxMissing } from "./tmux.ts";

// `persona chat` driven the way a person uses it: a real terminal (tmux), keys typed with
// send-keys, the screen read back with capture-pane.
const skipReason = tmuxMissing;

const { start, waitForScreen, type, kill } = terminal("persona-cli-test", "chat");

let service: TestService;
let user: TestUser;
let env: Record<string, string>;
let personaId: string;

describe("persona chat in a terminal", { timeout: 120_000 }, () => {
  beforeAll(async () => {
    if (skipReason) return;
    service = await startTestService();
    ({ user, env, personaId } = await chatterWithPersona(service, { name: "Orion", instructions: "You are a stargazing guide.", greeting_message: "Clear skies, cadet!" }));
  });

  afterAll(async () => {
    kill();
    await service?.close();
  });

  it.skipIf(skipReason)(`streams replies, starts over with /new and quits with /exit${skipReason ? ` (skipped: ${skipReason})` : ""}`, async () => {
    const started = start(["chat", personaId], env, { x: 160, y: 50 });
    expect(started.status, started.stderr).toBe(0);

    let text = await waitForScreen((t) => /^you> $/m.test(t), "the prompt");
    expect(text).toMatch(/Chatting with Orion \(conversation [0-9a-f-]{36}\)\./);
    // The conversation's stored greeting, shown once.
    expect(text.split("Orion> Clear skies, cadet!")).toHaveLength(2);

    type("Hello from tmux");
    text = await waitForScreen((t) => /you> Hello from tmux\nOrion> \S.*\n(\n)*you> $/m.test(t), "the streamed reply and a new prompt");
    const reply = /you> Hello from tmux\nOrion> (.*)\n/.exec(text)![1]!;
    expect(reply.length).toBeGreaterThan(0);
    expect(reply).not.toContain("[stopped]");

    type("/new");
    text = await waitForScreen((t) => (t.match(/Chatting with Orion \(conversation/g) ?? []).length === 2, "a second conversation");

    type("/exit");
    text = await waitForScreen((t) => t.includes("[exit "), "the chat to end");
    expect(text).toContain("[exit 0]");

    // What the screen showed was really stored: the first conversation has the exchange.
    const listed = await service.fetch(`/v1/conversations?persona_id=${personaId}`, { headers: user.auth });
    const conversations = (await listed.json()).data as { message_count: number }[];
    expect(conversations.map((c) => c.message_count).sort()).toEqual([0, 2]);
  });
});
