import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";
import { chatterWithPersona, terminal, tmuxMissing } from "./tmux.ts";

// `/regen`, `/edit` and `/branch` in `persona chat`, typed into a real terminal (tmux) and read
// back with capture-pane, against the offline model.
const skipReason = tmuxMissing;

const { start, waitForScreen, type, kill } = terminal("persona-cli-tree", "chat");

let service: TestService;
let user: TestUser;
let env: Record<string, string>;
let personaId: string;

describe("persona chat's conversation-tree commands in a terminal", { timeout: 120_000 }, () => {
  beforeAll(async () => {
    if (skipReason) return;
    service = await startTestService();
    ({ user, env, personaId } = await chatterWithPersona(service, { name: "Orion", instructions: "You are Orion, a stargazing guide.", greeting_message: "Clear skies, cadet!" }));
  });

  afterAll(async () => {
    kill();
    await service?.close();
  });

  it.skipIf(skipReason)(`regenerates, edits and switches branches${skipReason ? ` (skipped: ${skipReason})` : ""}`, async () => {
    const started = start(["chat", personaId], env, { x: 200, y: 60 });
    expect(started.status, started.stderr).toBe(0);
    let text = await waitForScreen((t) => /^you> $/m.test(t), "the prompt");
    expect(text).toContain("/regen answers again");
    const conversationId = /\(conversation ([0-9a-f-]{36})\)/.exec(text)![1]!;

    type("/regen");
    await waitForScreen((t) => t.includes("(there is no reply to regenerate yet)"), "the note that nothing can be regenerated");

    type("Tell me about Vega");
    await waitForScreen((t) => /you> Tell me about Vega\nOrion> .*Vega.*\n(\n)*you> $/m.test(t), "the first reply");

    type("/regen");
    await waitForScreen((t) => t.includes("(alternative 2 of 2)"), "the regenerated reply");

    type("/edit Tell me about Deneb");
    text = await waitForScreen((t) => /you> \/edit Tell me about Deneb\nOrion> .*Deneb.*\n/m.test(t), "the edited branch's reply");

    // A branch counts its messages from the greeting on.
    type("/branch");
    text = await waitForScreen((t) => /\* 1\. 3 messages, last: .*Deneb/.test(t) && / {2}2\. 3 messages, last: .*Vega/.test(t), "the branch list");

    type("/branch 2");
    await waitForScreen((t) => t.includes("(switched to branch 2;"), "the switch");

    type("/exit");
    text = await waitForScreen((t) => t.includes("[exit "), "the chat to end");
    expect(text).toContain("[exit 0]");

    // What the screen showed was stored: three replies (two alternatives and the edit's), the Vega branch active.
    const read = await (await service.fetch(`/v1/conversations/${conversationId}`, { headers: user.auth })).json();
    expect(read.messages[0]).toMatchObject({ greeting: true, content: "Clear skies, cadet!" });
    expect(read.messages.map((m: { content: string }) => m.content)[1]).toBe("Tell me about Vega");
    expect(read.messages.at(-1)).toMatchObject({ role: "assistant", alternative_index: 1, alternative_count: 2 });
    const stored = await service.services.db.knex("messages").where({ conversation_id: conversationId, role: "assistant" }).where("depth", ">", 0).count({ n: "*" }).first();
    expect(Number(stored?.n)).toBe(3);
  });
});
