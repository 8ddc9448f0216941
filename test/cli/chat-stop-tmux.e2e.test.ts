import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { startTestService, type TestService } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";
import { chatterWithPersona, terminal, tmuxMissing } from "./tmux.ts";

// Issue 21: Ctrl-C (or /stop) during a reply in `persona chat` stops the generation on the server,
// which stores the partial reply marked stopped. Driven in a real terminal (tmux).
const skipReason = tmuxMissing;

const { tmux, start, waitForScreen, type, kill } = terminal("persona-cli-stop", "chat");

let fake: FakeOpenAI;
let service: TestService;
let user: TestUser;
let env: Record<string, string>;
let personaId: string;

describe("stopping a reply in persona chat", { timeout: 120_000 }, () => {
  beforeAll(async () => {
    if (skipReason) return;
    fake = await startFakeOpenAI();
    service = await startTestService({ env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test-secret", LLM_MAX_RETRIES: "0" } });
    ({ user, env, personaId } = await chatterWithPersona(service, { name: "Orion", instructions: "You are a stargazing guide.", greeting_message: "Clear skies!" }));
    // Every reply is long and slow: there is time to stop it; titles answer like any chat call.
    fake.chat.always({ chunks: Array.from({ length: 200 }, (_, i) => `star${i} `), chunkDelayMs: 100 });
  }, 120_000);

  afterAll(async () => {
    kill();
    await service?.close();
    await fake?.close();
  });

  it.skipIf(skipReason)(`Ctrl-C and /stop stop the generation; the partial replies are stored, marked stopped${skipReason ? ` (skipped: ${skipReason})` : ""}`, async () => {
    const started = start(["chat", personaId], env, { x: 200, y: 50 });
    expect(started.status, started.stderr).toBe(0);
    let text = await waitForScreen((t) => /^you> $/m.test(t), "the prompt");
    expect(text).toContain("Ctrl-C (or /stop) stops a reply");

    type("Tell me everything");
    await waitForScreen((t) => t.includes("Orion> star0 star1 star2 star3 "), "the reply to start");
    tmux("send-keys", "-t", "chat", "C-c");
    text = await waitForScreen((t) => /Orion> star0 .*\[stopped\]\n(\n)*you> $/m.test(t), "the stopped reply and a new prompt");

    type("And again");
    await waitForScreen((t) => (t.match(/Orion> star0 star1 star2 star3 /g) ?? []).length === 2, "the second reply to start");
    type("/stop");
    text = await waitForScreen((t) => (t.match(/\[stopped\]/g) ?? []).length === 2 && /you> $/.test(t.trimEnd() + " "), "the second stopped reply");

    type("/exit");
    text = await waitForScreen((t) => t.includes("[exit "), "the chat to end");
    expect(text).toContain("[exit 0]");

    // Both partial replies are stored, marked stopped, and the chat process is gone: the server stopped them.
    const conversations = (await (await service.fetch(`/v1/conversations?persona_id=${personaId}`, { headers: user.auth })).json()).data as { id: string }[];
    const messages = (await (await service.fetch(`/v1/conversations/${conversations[0]!.id}`, { headers: user.auth })).json()).messages as { role: string; stopped?: boolean; content: string; greeting?: true }[];
    // Replies, not the greeting the conversation opened with.
    const replies = messages.filter((m) => m.role === "assistant" && !m.greeting);
    expect(replies).toHaveLength(2);
    for (const reply of replies) {
      expect(reply.stopped).toBe(true);
      expect(reply.content).toMatch(/^star0 star1 star2 star3 /);
      expect(reply.content).not.toContain("star199");
    }
    expect(fake.requests.filter((r) => r.path === "/v1/chat/completions" && r.aborted)).toHaveLength(2);
  });
});
