import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, tempConfigDir } from "../cli/run-cli.ts";
import { expectOk } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser } from "../support/users.ts";

// `persona login` and an account scheduled for deletion (issue 34 item 8): the refusal says how to
// restore it, and `--restore` restores it and stores the new login.

let service: TestService;

beforeAll(async () => {
  service = await startTestService();
});

afterAll(async () => {
  await service?.close();
});

describe("persona login --restore", { timeout: 120_000 }, () => {
  it("names the way back when the account is scheduled for deletion, restores it, and stores the login", async () => {
    const user = await registerUser(service);
    await apiKeyFor(service, user);
    await expectOk(service.clientFor(user).DELETE("/v1/auth/me", { body: { password: user.password } }));
    const env = { PERSONA_CONFIG_DIR: await tempConfigDir(), PERSONA_BASE_URL: service.url };
    const login = (extra: string[], password = user.password) => runCli(["login", "--email", user.email, "--password-stdin", ...extra], { env, input: password });

    const refused = await login([]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain("scheduled for deletion");
    expect(refused.stderr).toContain("--restore");
    const asJson = await login(["--json"]);
    expect(asJson.code).toBe(3);
    expect(JSON.parse(asJson.stderr.trim().split("\n").at(-1)!)).toMatchObject({ error: { code: "account_pending_deletion", exit_code: 3 } });

    const wrong = await login(["--restore"], "Not-the-password-1");
    expect(wrong.code).toBe(3);
    expect((await service.services.db.knex("users").where({ id: user.id }).first("deleted_at")).deleted_at).not.toBeNull();

    const restored = await login(["--restore", "--json"]);
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.json()).toMatchObject({ auth: "session", user: { id: user.id, email: user.email }, restored: { api_keys: 1 } });
    const whoami = await runCli(["whoami", "--json"], { env });
    expect(whoami.code, whoami.stderr).toBe(0);
    expect(whoami.json()).toMatchObject({ user: { id: user.id } });

    const human = await login(["--restore"]);
    expect(human.code).toBe(1);
    expect(human.stderr).toContain("not scheduled for deletion");
    const plain = await login([]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toContain(`as ${user.username}`);
  });
});
