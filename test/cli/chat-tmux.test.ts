import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { root } from "../support/contract.ts";
import { jsonHeaders, startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { cliPath, runCli, tempConfigDir } from "./run-cli.ts";

// `persona chat` driven the way a person uses it: a real terminal (tmux), keys typed with
// send-keys, the screen read back with capture-pane.
const tmuxInstalled = spawnSync("tmux", ["-V"]).status === 0;
const conversationsLive = !readFileSync(join(root, "server", "handlers.ts"), "utf8").includes('notLive("conversations"');
const skipReason = !tmuxInstalled
  ? "tmux is not installed (scripts/ci/tmux.sh installs it)"
  : !conversationsLive
    ? 'conversations are not live yet (server/handlers.ts still has notLive("conversations"))'
    : undefined;

const socket = `persona-cli-test-${randomBytes(4).toString("hex")}`;
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

let service: TestService;
let user: TestUser;
let env: Record<string, string>;
let personaId: string;

describe("persona chat in a terminal", { timeout: 120_000 }, () => {
  beforeAll(async () => {
    if (skipReason) return;
    service = await startTestService();
    user = await registerUser(service);
    env = { PERSONA_CONFIG_DIR: await tempConfigDir(), PERSONA_BASE_URL: service.url };
    const login = await runCli(["login", "--email", user.email, "--password-stdin"], { env, input: user.password });
    expect(login.code, login.stderr).toBe(0);
    const response = await service.fetch("/v1/personas", {
      method: "POST",
      headers: { ...jsonHeaders, ...user.auth },
      body: JSON.stringify({ name: "Orion", instructions: "You are a stargazing guide.", greeting_message: "Clear skies, cadet!" }),
    });
    const persona = await response.json();
    expect(response.status, JSON.stringify(persona)).toBe(201);
    personaId = persona.id;
  });

  afterAll(async () => {
    if (tmuxInstalled) tmux("kill-server");
    await service?.close();
  });

  it.skipIf(skipReason)(`streams replies, starts over with /new and quits with /exit${skipReason ? ` (skipped: ${skipReason})` : ""}`, async () => {
    const command = `${quote(process.execPath)} ${quote(cliPath)} chat ${personaId}; echo "[exit $?]"; sleep 600`;
    const { TMUX: _nested, ...outer } = process.env;
    const started = spawnSync("tmux", ["-L", socket, "new-session", "-d", "-s", "chat", "-x", "160", "-y", "50", "-c", root, command], {
      encoding: "utf8",
      env: { ...outer, ...env },
    });
    expect(started.status, started.stderr).toBe(0);

    let text = await waitForScreen((t) => /^you> $/m.test(t), "the prompt");
    expect(text).toMatch(/Chatting with Orion \(conversation [0-9a-f-]{36}\)\./);
    expect(text).toContain("Orion> Clear skies, cadet!");

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
