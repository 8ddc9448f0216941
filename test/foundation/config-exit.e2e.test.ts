import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { root } from "../support/contract.ts";

// A typo in a setting must stop the process at once with a message that names it, not misbehave
// later (loadConfig's own rules are in config.test.ts).
describe("node server/main.ts with a bad setting", () => {
  it("exits with code 1 and says which setting is wrong", async () => {
    const child = spawn(process.execPath, ["server/main.ts"], {
      cwd: root,
      env: { ...process.env, PORT: "abc", DATABASE_URL: "", EMBEDDED_DB_IN_MEMORY: "true" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    const code = await new Promise<number | null>((done) => child.once("exit", (exitCode) => done(exitCode)));
    clearTimeout(timer);
    expect(code).toBe(1);
    expect(stderr).toMatch(/^persona: Invalid setting: PORT="abc"/);
    expect(stderr).not.toMatch(/\bat .*\.ts:\d+/);
  });
});
