import { stat, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { runCli, tempConfigDir } from "./run-cli.ts";

// The `persona` binary as a person or a script uses it: a child process against the real server,
// with its login in a temporary config directory.
let service: TestService;
let user: TestUser;
let configDir: string;
let env: Record<string, string>;

beforeAll(async () => {
  service = await startTestService();
  user = await registerUser(service);
  configDir = await tempConfigDir();
  env = { PERSONA_CONFIG_DIR: configDir, PERSONA_BASE_URL: service.url };
});

afterAll(async () => {
  await service?.close();
});

// Each step starts a Node process; on a loaded CI machine a test of several steps takes a while.
const SLOW = 120_000;

const COMMANDS = ["serve", "worker", "migrate", "login", "logout", "keys", "oauth-clients", "users", "mail", "personas", "conversations", "knowledge", "chat", "export", "api"];

describe("help and usage", { timeout: SLOW }, () => {
  it("--help lists every command and the exit codes", async () => {
    const result = await runCli(["--help"]);
    expect(result.code).toBe(0);
    for (const command of COMMANDS) expect(result.stdout).toMatch(new RegExp(`^  ${command}\\b`, "m"));
    expect(result.stdout).toContain("Exit codes:");
  });

  it("each command's --help has examples", async () => {
    for (const command of ["keys", "keys create", "mail", "oauth-clients register", "chat", "knowledge upload"]) {
      const result = await runCli([...command.split(" "), "--help"]);
      expect(result.code, command).toBe(0);
      expect(result.stdout, command).toContain("Examples:");
    }
  });

  it("usage errors exit 2 with a persona: message on stderr", async () => {
    const unknown = await runCli(["frobnicate"], { env });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^persona: unknown command 'frobnicate'/);
    expect(unknown.stdout).toBe("");

    const missing = await runCli(["keys", "revoke"], { env });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("missing required argument 'id'");

    const badValue = await runCli(["mail", "list", "--limit", "0"], { env });
    expect(badValue.code).toBe(2);

    const badScope = await runCli(["keys", "create", "--name", "x", "--scope", "everything"], { env });
    expect(badScope.code).toBe(2);
    expect(badScope.stderr).toMatch(/^persona: unknown scope everything/);
  });
});

describe("login", { timeout: SLOW }, () => {
  it("is required: without it a client command exits 3", async () => {
    const result = await runCli(["keys", "list"], { env });
    expect(result.code).toBe(3);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/^persona: not logged in to http:\/\/127\.0\.0\.1:\d+/);
    const json = await runCli(["keys", "list", "--json"], { env });
    expect(json.code).toBe(3);
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { code: "not_logged_in", exit_code: 3, message: expect.stringMatching(/^not logged in to http/) } });
  });

  it("refuses a wrong password with exit 3 and the request id", async () => {
    const result = await runCli(["login", "--email", user.email, "--password-stdin"], { env, input: "wrong-password-1" });
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/^persona: .+ \(unauthorized, request [\w-]+\)\n$/);
  });

  it("without a terminal, a missing --email is a usage error rather than a prompt", async () => {
    const result = await runCli(["login"], { env });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--email is required");
  });

  it("stores the base URL and tokens in a 600 file inside a 700 directory", async () => {
    const result = await runCli(["login", "--email", user.email, "--password-stdin", "--json"], { env, input: `${user.password}\n` });
    expect(result.code, result.stderr).toBe(0);
    const answer = result.json<{ base_url: string; user: { id: string; email: string } }>();
    expect(answer.base_url).toBe(service.url);
    expect(answer.user).toMatchObject({ id: user.id, email: user.email });
    expect(result.stdout).not.toContain("refresh_token");

    const file = join(configDir, "credentials.json");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(configDir)).mode & 0o777).toBe(0o700);
    const stored = JSON.parse(await readFile(file, "utf8"));
    // Kept by profile, then by server (the profile's default server: the one logged in to last).
    expect(stored).toMatchObject({ version: 2, profiles: { default: { server: service.url, logins: { [service.url]: { auth: { type: "session" }, user: { id: user.id } } } } } });
    expect(stored.profiles.default.logins[service.url].auth.refresh_token).toEqual(expect.any(String));

    const whoami = await runCli(["whoami", "--json"], { env });
    expect(whoami.code, whoami.stderr).toBe(0);
    expect(whoami.json<{ user: { id: string } }>().user.id).toBe(user.id);
  });

  it("refreshes an expired access token and stores the new pair (the old refresh token is spent)", async () => {
    const other = await registerUser(service);
    const dir = await tempConfigDir();
    await runCli(["login", "--email", other.email, "--password-stdin"], { env: { ...env, PERSONA_CONFIG_DIR: dir }, input: other.password });
    const file = join(dir, "credentials.json");
    const authOf = (credentials: { profiles: Record<string, { logins: Record<string, { auth: { access_token: string; refresh_token: string } }> }> }) =>
      credentials.profiles.default!.logins[service.url]!.auth;
    const before = JSON.parse(await readFile(file, "utf8"));
    const expired = structuredClone(before);
    authOf(expired).access_token = "expired.jwt.token";
    await writeFile(file, JSON.stringify(expired), { mode: 0o600 });

    const result = await runCli(["whoami", "--json"], { env: { ...env, PERSONA_CONFIG_DIR: dir } });
    expect(result.code, result.stderr).toBe(0);
    const after = JSON.parse(await readFile(file, "utf8"));
    expect(authOf(after).refresh_token).not.toBe(authOf(before).refresh_token);
    expect(authOf(after).access_token).not.toBe("expired.jwt.token");
    expect((await stat(file)).mode & 0o777).toBe(0o600);

    // The stored pair works for the next command too.
    expect((await runCli(["whoami"], { env: { ...env, PERSONA_CONFIG_DIR: dir } })).code).toBe(0);
  });

  it("never sends a stored login to another server", async () => {
    const result = await runCli(["keys", "list", "--base-url", "http://127.0.0.1:9"], { env });
    expect(result.code).toBe(3);
    expect(result.stderr).toContain("not logged in to http://127.0.0.1:9");
  });
});

describe("keys", { timeout: SLOW }, () => {
  it("creates, lists and revokes keys with --json; a revoked key is gone (4 on a second revoke)", async () => {
    const created = await runCli(["keys", "create", "--name", "ci", "--scope", "personas:read", "--scope", "conversations:write", "--json"], { env });
    expect(created.code, created.stderr).toBe(0);
    const key = created.json<{ id: string; key: string; scopes: string[] }>();
    expect(key.key).toMatch(/^pk_/);
    expect(key.scopes).toEqual(["personas:read", "conversations:write"]);

    const coarse = await runCli(["keys", "create", "--name", "nightly", "--scope", "read", "--expires-in-days", "30", "--json"], { env });
    expect(coarse.code, coarse.stderr).toBe(0);
    expect(coarse.json<{ scopes: string[]; expires_at: string }>()).toMatchObject({ scopes: ["read"], expires_at: expect.any(String) });

    const listed = await runCli(["keys", "list", "--json"], { env });
    expect(listed.code).toBe(0);
    const ids = listed.json<{ data: { id: string; key_hint: string }[] }>().data.map((k) => k.id);
    expect(ids).toContain(key.id);

    const human = await runCli(["keys", "list"], { env });
    expect(human.stdout).toMatch(/^ID\s+NAME\s+KEY\s+SCOPES/);
    expect(human.stdout).not.toContain(key.key);

    const revoked = await runCli(["keys", "revoke", key.id, "--json"], { env });
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.json()).toMatchObject({ id: key.id, revoked_at: expect.any(String) });
    expect((await runCli(["keys", "list", "--json"], { env })).json<{ data: { id: string }[] }>().data.map((k) => k.id)).not.toContain(key.id);

    const again = await runCli(["keys", "revoke", key.id], { env });
    expect(again.code).toBe(4);
    expect(again.stderr).toMatch(/^persona: .+ \(not_found, request [\w-]+\)\n$/);

    // With --json the error is one JSON line on stderr, and stdout stays empty (issue 13, item 15).
    const json = await runCli(["keys", "revoke", key.id, "--json"], { env });
    expect(json.code).toBe(4);
    expect(json.stdout).toBe("");
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { code: "not_found", exit_code: 4, status: 404, request_id: expect.any(String) } });
  });

  it("--api-key stands in for the login; a revoked key exits 3", async () => {
    const key = (await runCli(["keys", "create", "--name", "admin", "--scope", "admin", "--json"], { env })).json<{ id: string; key: string }>();
    const keyEnv = { PERSONA_CONFIG_DIR: await tempConfigDir(), PERSONA_BASE_URL: service.url };
    const me = await runCli(["whoami", "--json", "--api-key", key.key], { env: keyEnv });
    expect(me.code, me.stderr).toBe(0);
    expect(me.json<{ user: { id: string } }>().user.id).toBe(user.id);

    await runCli(["keys", "revoke", key.id], { env });
    const refused = await runCli(["whoami", "--api-key", key.key], { env: keyEnv });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain("(unauthorized, request ");
  });
});

describe("commands on the server's database", { timeout: SLOW }, () => {
  // The embedded test database is served on a loopback port: the child reaches it by URL.
  const dbEnv = () => ({ ...env, DATABASE_URL: service.services.db.url });

  it("mail lists the outbox and shows one mail; an unknown id exits 4", async () => {
    const listed = await runCli(["mail", "--json", "--to", user.email], { env: dbEnv() });
    expect(listed.code, listed.stderr).toBe(0);
    const mails = listed.json<{ data: { id: string; to: string; kind: string; subject: string }[] }>().data;
    const verify = mails.find((m) => m.kind === "verify_email");
    expect(verify).toMatchObject({ to: user.email });

    const shown = await runCli(["mail", "show", verify!.id], { env: dbEnv() });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`to:         ${user.email}`);
    expect(shown.stdout).toMatch(/verify-email\?token=vt_/);

    const unknown = await runCli(["mail", "show", "0193a6e1-5c2d-7f10-8a4b-3c9d2e1f0a77"], { env: dbEnv() });
    expect(unknown.code).toBe(4);
  });

  it("users set-plan lifts an account past the free plan's limits; users list shows it (issue 13, item 6)", async () => {
    const client = service.clientFor(user);
    const personas = async (n: number) => (await client.POST("/v1/personas", { body: { name: `Plan test ${n}`, instructions: "Be brief." } })).response;
    const existing = (await client.GET("/v1/personas", { params: { query: { limit: 100 } } })).data!.total;
    for (let i = existing; i < 3; i++) expect((await personas(i)).status).toBe(201);
    expect((await personas(4)).status).toBe(402);

    const set = await runCli(["users", "set-plan", user.email.toUpperCase(), "pro", "--json"], { env: dbEnv() });
    expect(set.code, set.stderr).toBe(0);
    expect(set.json()).toMatchObject({ id: user.id, plan: "pro" });
    expect((await personas(5)).status).toBe(201);

    const listed = await runCli(["users", "list", "--plan", "pro", "--json"], { env: dbEnv() });
    expect(listed.json<{ data: { id: string }[] }>().data.map((a) => a.id)).toContain(user.id);
    expect((await runCli(["users", "set-plan", "nobody@example.com", "pro"], { env: dbEnv() })).code).toBe(4);
    expect((await runCli(["users", "set-plan", user.username, "platinum"], { env: dbEnv() })).code).toBe(2);
  });

  it("oauth-clients registers an app the OAuth flow accepts, lists and removes it", async () => {
    const redirect = "http://127.0.0.1:8765/callback";
    const registered = await runCli(["oauth-clients", "register", "--name", "CLI test app", "--redirect-uri", redirect, "--json"], { env: dbEnv() });
    expect(registered.code, registered.stderr).toBe(0);
    const client = registered.json<{ client_id: string; client_secret: string; redirect_uris: string[] }>();
    expect(client.client_id).toMatch(/^oc_/);
    expect(client.client_secret).toMatch(/^cs_/);
    expect(client.redirect_uris).toEqual([redirect]);

    const page = await service.fetch(
      `/v1/oauth/authorize?response_type=code&client_id=${client.client_id}&redirect_uri=${encodeURIComponent(redirect)}&scope=personas%3Aread&state=s1`,
    );
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("CLI test app");

    const listed = await runCli(["oauth-clients", "list", "--json"], { env: dbEnv() });
    expect(listed.json<{ data: { client_id: string }[] }>().data.map((c) => c.client_id)).toContain(client.client_id);

    expect((await runCli(["oauth-clients", "remove", client.client_id], { env: dbEnv() })).code).toBe(0);
    expect((await runCli(["oauth-clients", "remove", client.client_id], { env: dbEnv() })).code).toBe(4);
  });

  it("oauth-clients refuses a plain-http redirect off loopback (exit 1, the field named)", async () => {
    const result = await runCli(["oauth-clients", "register", "--name", "bad", "--redirect-uri", "http://example.com/cb"], { env: dbEnv() });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^persona: .*redirectUris\.0 must be https.*\(invalid_request\)/);
  });
});

describe("export", { timeout: SLOW }, () => {
  it("requests a data export", async () => {
    const result = await runCli(["export", "--json"], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.json()).toMatchObject({ export_id: expect.any(String), status: expect.stringMatching(/processing|ready/) });
  });
});

describe("logout", { timeout: SLOW }, () => {
  it("removes the stored login; client commands then exit 3", async () => {
    const dir = await tempConfigDir();
    const localEnv = { ...env, PERSONA_CONFIG_DIR: dir };
    await runCli(["login", "--email", user.email, "--password-stdin"], { env: localEnv, input: user.password });
    const result = await runCli(["logout", "--json"], { env: localEnv });
    expect(result.code).toBe(0);
    expect(result.json()).toMatchObject({ logged_out: true });
    await expect(stat(join(dir, "credentials.json"))).rejects.toThrow();
    expect((await runCli(["whoami"], { env: localEnv })).code).toBe(3);
  });
});
