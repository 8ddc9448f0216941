import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOk } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";
import { runCli, tempConfigDir } from "./run-cli.ts";

// Logins kept per server and per profile (issue 39 item 4), as `gh` keeps one per host and the
// Stripe CLI one per profile: two servers' logins coexist and each is used against its own server,
// a profile holds another account on the same server, logging out of one leaves the others, the
// file stays the user's own (0600 in a 0700 directory), and an old single-login file keeps working.
const SLOW = 180_000;

let one: TestService;
let two: TestService;
let ada: TestUser;
let bob: TestUser;
let admin: TestUser;

beforeAll(async () => {
  [one, two] = await Promise.all([startTestService(), startTestService()]);
  [ada, admin, bob] = await Promise.all([registerUser(one), registerUser(one), registerUser(two)]);
  await expectOk(one.clientFor(ada).POST("/v1/personas", { body: { name: "Ada's Orion", instructions: "Be brief." } }), 201);
  await expectOk(two.clientFor(bob).POST("/v1/personas", { body: { name: "Bob's Vega", instructions: "Be brief." } }), 201);
}, SLOW);

afterAll(async () => {
  await Promise.all([one?.close(), two?.close()]);
});

/** `persona` with only a config directory: the server comes from --base-url or the stored logins. */
const cli = (configDir: string, args: string[], input?: string, env: Record<string, string> = {}) =>
  runCli(args, { env: { PERSONA_CONFIG_DIR: configDir, ...env }, ...(input === undefined ? {} : { input }) });

const login = (configDir: string, service: TestService, user: TestUser, extra: string[] = []) =>
  cli(configDir, ["--base-url", service.url, "login", "--email", user.email, "--password-stdin", "--json", ...extra], user.password);

async function whoami(configDir: string, args: string[] = [], env: Record<string, string> = {}) {
  const result = await cli(configDir, ["whoami", "--json", ...args], undefined, env);
  return result.code === 0 ? result.json<{ base_url: string; profile: string; user: { username: string } }>() : { code: result.code, stderr: result.stderr };
}

const personaNames = async (configDir: string, args: string[]) => {
  const result = await cli(configDir, ["personas", "list", "--json", ...args]);
  expect(result.code, result.stderr).toBe(0);
  return result.json<{ data: { name: string }[] }>().data.map((persona) => persona.name);
};

async function expectPrivate(configDir: string) {
  expect((await stat(join(configDir, "credentials.json"))).mode & 0o777).toBe(0o600);
  expect((await stat(configDir)).mode & 0o777).toBe(0o700);
}

describe("logins per server", { timeout: SLOW }, () => {
  it("two servers' logins coexist, each used against its own server; the last one is the default", async () => {
    const dir = await tempConfigDir();
    expect((await login(dir, one, ada)).code).toBe(0);
    const second = await login(dir, two, bob);
    expect(second.code, second.stderr).toBe(0);
    expect(second.json()).toMatchObject({ base_url: two.url, profile: "default", user: { username: bob.username } });
    await expectPrivate(dir);

    expect(await whoami(dir, ["--base-url", one.url])).toMatchObject({ base_url: one.url, user: { username: ada.username } });
    expect(await whoami(dir, ["--base-url", two.url])).toMatchObject({ base_url: two.url, user: { username: bob.username } });
    // Without --base-url: the server logged in to last (PERSONA_BASE_URL would name another).
    expect(await whoami(dir)).toMatchObject({ base_url: two.url, user: { username: bob.username } });
    expect(await whoami(dir, [], { PERSONA_BASE_URL: one.url })).toMatchObject({ user: { username: ada.username } });
    expect(await personaNames(dir, ["--base-url", one.url])).toEqual(["Ada's Orion"]);
    expect(await personaNames(dir, ["--base-url", two.url])).toEqual(["Bob's Vega"]);

    const listed = await cli(dir, ["logins", "--json"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.json<{ data: unknown[] }>().data).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ profile: "default", base_url: one.url, default: false, auth: "session", user: expect.objectContaining({ username: ada.username }) }),
        expect.objectContaining({ profile: "default", base_url: two.url, default: true, auth: "session", user: expect.objectContaining({ username: bob.username }) }),
      ]),
    );
    expect(listed.stdout).not.toContain("token");
    const table = await cli(dir, ["logins"]);
    expect(table.stdout).toMatch(new RegExp(`^default\\s+${two.url.replace(/[.:/]/g, "\\$&")} \\*\\s+${bob.username}\\s+session$`, "m"));

    // Logging out of the default server leaves the other login, which becomes the default.
    const out = await cli(dir, ["logout", "--json"]);
    expect(out.json()).toMatchObject({ logged_out: true, base_url: two.url, servers: [two.url] });
    expect(await whoami(dir)).toMatchObject({ base_url: one.url, user: { username: ada.username } });
    const refused = await whoami(dir, ["--base-url", two.url]);
    expect(refused).toMatchObject({ code: 3 });
    expect((refused as { stderr: string }).stderr).toContain(`not logged in to ${two.url}`);
    await expectPrivate(dir);
  });

  it("an API key login is kept per server too, next to a password login", async () => {
    const dir = await tempConfigDir();
    expect((await login(dir, one, ada)).code).toBe(0);
    const key = await apiKeyFor(two, bob, ["admin"]);
    const stored = await cli(dir, ["--base-url", two.url, "--api-key", key, "login", "--json"]);
    expect(stored.code, stored.stderr).toBe(0);
    expect(stored.json()).toMatchObject({ auth: "api_key", base_url: two.url });
    // The key is stored, not needed on the command line any more; the other server's login is untouched.
    expect(await personaNames(dir, ["--base-url", two.url])).toEqual(["Bob's Vega"]);
    expect(await personaNames(dir, ["--base-url", one.url])).toEqual(["Ada's Orion"]);
  });
});

describe("profiles", { timeout: SLOW }, () => {
  it("keep other accounts on the same server, chosen by --profile or PERSONA_PROFILE; logout --all of one leaves the rest", async () => {
    const dir = await tempConfigDir();
    expect((await login(dir, one, ada)).code).toBe(0);
    // `login --profile` (the global option, written after the command) and `--profile login` alike.
    const asAdmin = await login(dir, one, admin, ["--profile", "admin"]);
    expect(asAdmin.code, asAdmin.stderr).toBe(0);
    expect(asAdmin.json()).toMatchObject({ profile: "admin", user: { username: admin.username } });
    expect((await cli(dir, ["--profile", "admin", "--base-url", two.url, "login", "--email", bob.email, "--password-stdin"], bob.password)).code).toBe(0);

    expect(await whoami(dir)).toMatchObject({ profile: "default", user: { username: ada.username } });
    expect(await whoami(dir, ["--profile", "admin", "--base-url", one.url])).toMatchObject({ profile: "admin", user: { username: admin.username } });
    expect(await whoami(dir, [], { PERSONA_PROFILE: "admin" })).toMatchObject({ profile: "admin", base_url: two.url, user: { username: bob.username } });
    // --profile wins over PERSONA_PROFILE.
    expect(await whoami(dir, ["--profile", "default"], { PERSONA_PROFILE: "admin" })).toMatchObject({ profile: "default", user: { username: ada.username } });

    const missing = await cli(dir, ["--profile", "nobody", "whoami"]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain("in profile nobody: run `persona --profile nobody login`");
    const invalid = await cli(dir, ["--profile", "../etc", "whoami"]);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain("invalid profile name");

    const out = await cli(dir, ["--profile", "admin", "logout", "--all", "--json"]);
    expect(out.json()).toMatchObject({ logged_out: true, profile: "admin", servers: expect.arrayContaining([one.url, two.url]) });
    expect(await whoami(dir, ["--profile", "admin"])).toMatchObject({ code: 3 });
    expect(await whoami(dir)).toMatchObject({ profile: "default", user: { username: ada.username } });
    const left = await cli(dir, ["logins", "--json"]);
    expect(left.json<{ data: { profile: string }[] }>().data.map((entry) => entry.profile)).toEqual(["default"]);
    await expectPrivate(dir);

    // The last logout removes the file.
    expect((await cli(dir, ["logout"])).code).toBe(0);
    await expect(stat(join(dir, "credentials.json"))).rejects.toThrow();
    expect((await cli(dir, ["logins"])).stdout).toContain("no stored logins");
  });
});

describe("the single-login file of earlier versions", { timeout: SLOW }, () => {
  it("still logs in, and becomes the default profile's login when the file is next written", async () => {
    const dir = await tempConfigDir();
    expect((await login(dir, one, ada)).code).toBe(0);
    const file = join(dir, "credentials.json");
    const current = JSON.parse(await readFile(file, "utf8"));
    const { auth, user, updated_at } = current.profiles.default.logins[one.url];
    await writeFile(file, JSON.stringify({ version: 1, base_url: one.url, auth, user, updated_at }), { mode: 0o600 });

    expect(await whoami(dir)).toMatchObject({ base_url: one.url, user: { username: ada.username } });
    expect((await login(dir, two, bob)).code).toBe(0);
    const migrated = JSON.parse(await readFile(file, "utf8"));
    expect(migrated.version).toBe(2);
    expect(Object.keys(migrated.profiles.default.logins).sort()).toEqual([one.url, two.url].sort());
    expect(await whoami(dir, ["--base-url", one.url])).toMatchObject({ user: { username: ada.username } });
    await expectPrivate(dir);
  });
});
