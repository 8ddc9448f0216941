import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { root } from "../support/contract.ts";
import { jsonHeaders, startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { cliPath, runCli, tempConfigDir } from "./run-cli.ts";

// Issue 21: Ctrl-C (or /stop) during a reply in `persona chat` stops the generation on the server,
// which stores the partial reply marked stopped. Driven in a real terminal (tmux).
const tmuxInstalled = spawnSync("tmux", ["-V"]).status === 0;
const skipReason = tmuxInstalled ? undefined : "tmux is not installed (scripts/ci/tmux.sh installs it)";

const socket = `persona-cli-stop-${randomBytes(4).toString("hex")}`;
const tmux = (...args: string[]) => spawnSync("tmux", ["-L", socket, ...args], { encoding: "utf8" });
const screen = () => tmux("capture-pane", "-p", "-J", "-t", "chat", "-S", "-500").stdout;
const quote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;

async function waitForScreen(test: (text: string) => boolean, what: string, timeoutMs = 20_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let text = "";
  while (Date.now() < deadline) {
    text = screen();
    if (test(text)) return text;
    await new Promise((wait) => setTimeout(wait, 100));
  }
  throw new Error(`timed out waiting for ${what}; the screen:\n${text}`);
}

function type(text: string): void {
  tmux("send-keys", "-t", "chat", "-l", text);
  tmux("send-keys", "-t", "chat", "Enter");
}

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
    user = await registerUser(service);
    env = { PERSONA_CONFIG_DIR: await tempConfigDir(), PERSONA_BASE_URL: service.url };
    const login = await runCli(["login", "--email", user.email, "--password-stdin"], { env, input: user.password });
    expect(login.code, login.stderr).toBe(0);
    const response = await service.fetch("/v1/personas", {
      method: "POST",
      headers: { ...jsonHeaders, ...user.auth },
      body: JSON.stringify({ name: "Orion", instructions: "You are a stargazing guide.", greeting_message: "Clear skies!" }),
    });
    personaId = (await response.json()).id;
    // Every reply is long and slow: there is time to stop it; titles answer like any chat call.
    fake.chat.always({ chunks: Array.from({ length: 200 }, (_, i) => `star${i} `), chunkDelayMs: 100 });
  }, 120_000);

  afterAll(async () => {
    if (tmuxInstalled) tmux("kill-server");
    await service?.close();
    await fake?.close();
  });

  it.skipIf(skipReason)(`Ctrl-C and /stop stop the generation; the partial replies are stored, marked stopped${skipReason ? ` (skipped: ${skipReason})` : ""}`, async () => {
    const command = `${quote(process.execPath)} ${quote(cliPath)} chat ${personaId}; echo "[exit $?]"; sleep 600`;
    const { TMUX: _nested, ...outer } = process.env;
    const started = spawnSync("tmux", ["-L", socket, "new-session", "-d", "-s", "chat", "-x", "200", "-y", "50", "-c", root, command], {
      encoding: "utf8",
      env: { ...outer, ...env },
    });
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
    const messages = (await (await service.fetch(`/v1/conversations/${conversations[0]!.id}`, { headers: user.auth })).json()).messages as { role: string; stopped?: boolean; content: string }[];
    const replies = messages.filter((m) => m.role === "assistant");
    expect(replies).toHaveLength(2);
    for (const reply of replies) {
      expect(reply.stopped).toBe(true);
      expect(reply.content).toMatch(/^star0 star1 star2 star3 /);
      expect(reply.content).not.toContain("star199");
    }
    expect(fake.requests.filter((r) => r.path === "/v1/chat/completions" && r.aborted)).toHaveLength(2);
  });
});
