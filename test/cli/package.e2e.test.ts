import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import semver from "semver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { root } from "../support/contract.ts";
import { npmCliPath } from "../support/processes.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { runCli } from "./run-cli.ts";

// The installable CLI (issue 39 item 4): `npm pack` of packages/cli builds one bundled file with no
// dependencies, which installs offline into an empty directory outside the repository, on the
// pinned Node 24 and on the machine's Node 20 (the package's declared minimum) without an engine
// warning, and there logs in, lists personas and chats against a running server. The commands that
// need the server say so. Its start-up time is measured by `npm run bench:cli`, not here.
const run = promisify(execFile);
const packageDir = join(root, "packages", "cli");
const manifest = JSON.parse(await readFile(join(packageDir, "package.json"), "utf8")) as { name: string; version: string; engines: { node: string } };
const SYSTEM_NODE = "/usr/bin/node";
const SLOW = 240_000;

let service: TestService;
let tarball: string;
const scratches: string[] = [];

beforeAll(async () => {
  service = await startTestService({ env: { AUTO_AVATARS: "false" } });
  // A plain `npm pack` in packages/cli builds dist/ first (prepack), whatever was there before.
  await rm(join(packageDir, "dist"), { recursive: true, force: true });
  const env = { ...process.env, PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH}` };
  const { stdout } = await run(process.execPath, [npmCliPath(), "pack", "--json", "--pack-destination", await scratch()], { cwd: packageDir, env });
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf("["))) as { filename: string; files: { path: string }[] }[];
  expect(packed!.files.map((file) => file.path).sort()).toEqual(["README.md", "dist/THIRD_PARTY_LICENSES.txt", "dist/openapi.json", "dist/persona.js", "package.json"]);
  tarball = join(scratches[0]!, packed!.filename);
}, SLOW);

afterAll(async () => {
  await service?.close();
  await Promise.all(scratches.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function scratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "persona-cli-package-"));
  scratches.push(dir);
  return dir;
}

/** Installs the tarball into an empty project with npm on `node`, offline; answers the project and npm's output. */
async function install(node: string): Promise<{ dir: string; output: string; path: string }> {
  const dir = await scratch();
  await writeFile(join(dir, "package.json"), JSON.stringify({ name: "scratch", private: true }));
  // Only that Node on PATH (and the system's tools): the `persona` shebang finds it there.
  const path = `${dirname(node)}:/usr/bin:/bin`;
  const { stdout, stderr } = await run(node, [npmCliPath(), "install", "--offline", "--no-audit", "--no-fund", "--cache", join(dir, ".npm-cache"), tarball], {
    cwd: dir,
    env: { PATH: path, HOME: dir },
  });
  return { dir, output: stdout + stderr, path };
}

const nodes: [name: string, node: string][] = [["the pinned Node", process.execPath]];
if (existsSync(SYSTEM_NODE)) nodes.push([`the system Node (${(await run(SYSTEM_NODE, ["--version"])).stdout.trim()})`, SYSTEM_NODE]);
else console.warn(`cli package: ${SYSTEM_NODE} is missing, so the package runs on the pinned Node only`);

describe.each(nodes)("the CLI package installed with npm on %s", { timeout: SLOW }, (_name, node) => {
  let dir: string;
  let persona: (args: string[], input?: string) => ReturnType<typeof runCli>;
  let user: TestUser;

  beforeAll(async () => {
    const installed = await install(node);
    dir = installed.dir;
    expect(installed.output).toContain("added 1 package");
    expect(installed.output).not.toMatch(/EBADENGINE|npm warn/i);
    const env = { PATH: installed.path, HOME: dir, PERSONA_CONFIG_DIR: join(dir, "config") };
    persona = (args, input) => runCli(args, { bin: join(dir, "node_modules", ".bin", "persona"), cwd: dir, env, ...(input === undefined ? {} : { input }) });
    user = await registerUser(service);
    await mkdir(join(dir, "config"), { recursive: true });
  }, SLOW);

  it("is the package alone, with no dependencies", async () => {
    expect((await readdir(join(dir, "node_modules"))).filter((entry) => !entry.startsWith("."))).toEqual(["@persona-platform"]);
    expect(await readdir(join(dir, "node_modules", "@persona-platform"))).toEqual(["cli"]);
    const installed = JSON.parse(await readFile(join(dir, "node_modules", manifest.name, "package.json"), "utf8")) as { dependencies?: object };
    expect(installed.dependencies).toBeUndefined();
    const version = await persona(["--version"]);
    expect(version.stdout.trim()).toBe(manifest.version);
    // The package's engines admit this Node, so the claim of its README is tested here.
    expect(semver.satisfies((await run(node, ["--version"])).stdout.trim(), manifest.engines.node)).toBe(true);
  });

  it("logs in, creates and lists personas, and chats against the server", async () => {
    const login = await persona(["--base-url", service.url, "login", "--email", user.email, "--password-stdin", "--json"], user.password);
    expect(login.code, login.stderr).toBe(0);
    expect(login.json()).toMatchObject({ base_url: service.url, user: { username: user.username } });

    const created = await persona(["personas", "create", "--name", "Orion", "--instructions", "You are a stargazing guide. Be brief.", "--json"]);
    expect(created.code, created.stderr).toBe(0);
    const listed = await persona(["personas", "list", "--json"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.json<{ data: { name: string }[] }>().data.map((p) => p.name)).toEqual(["Orion"]);

    const chat = await persona(["chat", "Orion", "--json"], "Which star is brightest?\n");
    expect(chat.code, chat.stderr).toBe(0);
    const events = chat.stdout.trim().split("\n").map((line) => JSON.parse(line) as { type: string });
    expect(events.map((event) => event.type)).toContain("done");
    expect(events.filter((event) => event.type === "error")).toEqual([]);

    // Any operation of the contract, which the package carries next to its bundle.
    const api = await persona(["api", "personas_list", "--limit", "1", "--json"]);
    expect(api.code, api.stderr).toBe(0);
    expect(api.json<{ data: unknown[] }>().data).toHaveLength(1);
  });

  it("lists the server's commands, and each answers that it needs the server package", async () => {
    const help = await persona(["--help"]);
    expect(help.stdout).toContain("they need the server package");
    for (const command of [["serve"], ["migrate"], ["users", "list"], ["mail"], ["oauth-clients", "list"], ["backup", "x.tar"]]) {
      const result = await persona(command);
      expect(result.code, command.join(" ")).toBe(1);
      expect(result.stderr, command.join(" ")).toMatch(/^persona: .*needs the server package: run it from a Persona server installation/);
    }
    const json = await persona(["users", "list", "--json"]);
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { code: "needs_server", exit_code: 1 } });
  });
});
