import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { root } from "../support/contract.ts";
import { jsonHeaders, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { cliPath, runCli, tempConfigDir } from "./run-cli.ts";

// The CLI driven the way a person uses it: a real terminal (tmux), keys typed with send-keys, the
// screen read back with capture-pane. One tmux server per test file, on its own socket.

export const tmuxInstalled = spawnSync("tmux", ["-V"]).status === 0;
export const tmuxMissing = tmuxInstalled ? undefined : "tmux is not installed (scripts/ci/tmux.sh installs it)";

const quote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;

export interface Terminal {
  tmux(...args: string[]): SpawnSyncReturns<string>;
  /** Runs `persona <args>` in a new session; the shell shows `[exit N]` when it ends. */
  start(args: string[], env: Record<string, string>, size?: { x: number; y: number }): SpawnSyncReturns<string>;
  screen(): string;
  waitForScreen(test: (text: string) => boolean, what: string, timeoutMs?: number): Promise<string>;
  /** Types `text` and Enter. */
  type(text: string): void;
  /** Stops the tmux server (after the file's tests). */
  kill(): void;
}

export function terminal(prefix: string, session: string): Terminal {
  const socket = `${prefix}-${randomBytes(4).toString("hex")}`;
  const tmux = (...args: string[]) => spawnSync("tmux", ["-L", socket, ...args], { encoding: "utf8" });
  const screen = () => tmux("capture-pane", "-p", "-J", "-t", session, "-S", "-500").stdout;
  return {
    tmux,
    screen,
    start(args, env, size = { x: 200, y: 60 }) {
      const command = `${quote(process.execPath)} ${quote(cliPath)} ${args.map(quote).join(" ")}; echo "[exit $?]"; sleep 600`;
      // A test run inside tmux must not attach to the outer server.
      const { TMUX: _nested, ...outer } = process.env;
      return spawnSync("tmux", ["-L", socket, "new-session", "-d", "-s", session, "-x", String(size.x), "-y", String(size.y), "-c", root, command], {
        encoding: "utf8",
        env: { ...outer, ...env },
      });
    },
    async waitForScreen(test, what, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      let text = "";
      while (Date.now() < deadline) {
        text = screen();
        if (test(text)) return text;
        await new Promise((wait) => setTimeout(wait, 100));
      }
      throw new Error(`timed out waiting for ${what}; the screen:\n${text}`);
    },
    type(text) {
      tmux("send-keys", "-t", session, "-l", text);
      tmux("send-keys", "-t", session, "Enter");
    },
    kill() {
      if (tmuxInstalled) tmux("kill-server");
    },
  };
}

/**
 * A user logged in through the CLI (in a config dir of its own) with a persona to chat with: the
 * start of every `persona chat` terminal test. `env` is what the terminal's CLI runs with.
 */
export async function chatterWithPersona(
  service: TestService,
  persona: { name: string; instructions: string; greeting_message: string },
): Promise<{ user: TestUser; env: Record<string, string>; personaId: string }> {
  const user = await registerUser(service);
  const env = { PERSONA_CONFIG_DIR: await tempConfigDir(), PERSONA_BASE_URL: service.url };
  const login = await runCli(["login", "--email", user.email, "--password-stdin"], { env, input: user.password });
  expect(login.code, login.stderr).toBe(0);
  const response = await service.fetch("/v1/personas", { method: "POST", headers: { ...jsonHeaders, ...user.auth }, body: JSON.stringify(persona) });
  const created = await response.json();
  expect(response.status, JSON.stringify(created)).toBe(201);
  return { user, env, personaId: created.id };
}
