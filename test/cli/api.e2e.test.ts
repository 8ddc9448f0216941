import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadContract } from "../../cli/api/contract.ts";
import { listHelp, operationHelp } from "../../cli/api/help.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";
import { runCli, tempConfigDir } from "./run-cli.ts";

// `persona api <operationId>` (issue 13, item 22): flags, body and help made from the contract at
// run time, against the real server with a stored login.
let service: TestService;
let user: TestUser;
let env: Record<string, string>;
let dir: string;

beforeAll(async () => {
  service = await startTestService({ env: { AUTO_AVATARS: "false", DEFAULT_PLAN: "pro" } });
  user = await registerUser(service);
  env = { PERSONA_CONFIG_DIR: await tempConfigDir(), PERSONA_BASE_URL: service.url };
  dir = await mkdtemp(join(tmpdir(), "persona-api-"));
  const login = await runCli(["login", "--email", user.email, "--password-stdin"], { env, input: user.password });
  expect(login.code, login.stderr).toBe(0);
});

afterAll(async () => {
  await service?.close();
});

const SLOW = 180_000;
const MISSING = "0193a6e1-5c2d-7f10-8a4b-3c9d2e1f0a77";
const api = (args: string[], options: { input?: string; env?: Record<string, string> } = {}) => runCli(["api", ...args], { env: options.env ?? env, ...(options.input !== undefined ? { input: options.input } : {}) });

describe("help from the contract", () => {
  const contract = loadContract();

  it("lists every operation of the contract under its tag, and renders every operation's help", () => {
    const list = listHelp(contract);
    expect(contract.operations.length).toBeGreaterThan(100);
    expect(list).toContain(`Operations (${contract.operations.length}):`);
    for (const op of contract.operations) {
      expect(list).toMatch(new RegExp(`^  ${op.id} +${op.summary.replace(/[()]/g, "\\$&")}$`, "m"));
      const help = operationHelp(op, contract);
      expect(help, op.id).toMatch(new RegExp(`^Usage: persona api ${op.id} \\[flags\\]\n\n${op.summary.replace(/[()]/g, "\\$&")} \\(${op.method} `));
      expect(help, op.id).toMatch(op.scope ? new RegExp(`^Scope: ${op.scope}\\. `, "m") : /^Credential-free/m);
      for (const parameter of op.parameters) expect(help, op.id).toContain(`--${parameter.name.replace(/_/g, "-").toLowerCase()} <`);
    }
    expect(list.indexOf("\npersonas: ")).toBeLessThan(list.indexOf("\nconversations: "));
  });

  it("--help texts: the list, and one operation's flags with types, enums, limits, body fields and scope", { timeout: SLOW }, async () => {
    const list = await api(["--help"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^personas: AI characters/m);
    expect(list.stdout).toMatch(/^ {2}personas_get +Get a persona$/m);

    const listing = await api(["personas_list", "--help"]);
    expect(listing.code).toBe(0);
    expect(listing.stdout).toMatch(/--limit <integer> +query, optional, 1\.\.100, default 20\. Page size\./);
    expect(listing.stdout).toContain("--sort <created_at|updated_at|name>");
    expect(listing.stdout).toMatch(/Scope: personas:read\. .*\n?.*alternative form: read or chat or admin/);

    const create = await api(["personas_create", "--help"]);
    expect(create.stdout).toMatch(/^Body \(application\/json\):\n {2}name +string, required, 1\.\.80 chars\./m);
    expect(create.stdout).toMatch(/^ {2}category +assistant\|tutor\|.*(?:\n +)?default/m);
    expect(create.stdout).toContain("$ persona api personas_create --data '{\"name\":\"Captain Nova\"");

    const upload = await api(["knowledge_upload", "--help"]);
    expect(upload.stdout).toMatch(/--persona-id <uuid> +path, required\./);
    expect(upload.stdout).toMatch(/--file <path> +required: the file, sent as the multipart part `file`/);

    // Without an operation it is a usage error that shows the list.
    const bare = await api([]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain("Usage: persona api <operation> [flags]");
    // `persona --help` names the command.
    expect((await runCli(["--help"])).stdout).toMatch(/^ {2}api \[operation\] \[flags\.\.\.\]/m);
  });
});

describe("usage errors exit 2 before anything is sent", { timeout: SLOW }, () => {
  it("an unknown operation, flag, enum value, number, missing required flag or bad JSON", async () => {
    const unknown = await api(["personas_gett"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^persona: unknown operation 'personas_gett'\n\(Did you mean personas_get\?\)/);
    for (const args of [
      ["personas_get", "--id", MISSING, "--colour", "red"],
      ["personas_list", "--sort", "popularity"],
      ["personas_list", "--limit", "ten"],
      ["personas_get"],
      ["personas_create", "--data", "{name: 'x'}"],
      ["personas_create"],
      ["personas_get", "--id", MISSING, "extra"],
      ["knowledge_upload", "--persona-id", MISSING],
    ]) {
      const result = await api(args);
      expect(result.code, `${args.join(" ")}\n${result.stderr}`).toBe(2);
      expect(result.stdout, args.join(" ")).toBe("");
      expect(result.stderr, args.join(" ")).toMatch(/^persona: /);
    }
    expect((await api(["personas_create", "--data", "{oops"])).stderr).toMatch(/^persona: --data is not JSON: /);
  });
});

describe("calls", { timeout: SLOW }, () => {
  it("POST with --data, --data @file and --data @-; GET with a path flag; a list with query flags", async () => {
    const created = await api(["personas_create", "--data", JSON.stringify({ name: "Api Nova", instructions: "Be brief.", is_public: true })]);
    expect(created.code, created.stderr).toBe(0);
    // Pretty JSON without --json.
    expect(created.stdout).toMatch(/^\{\n {2}"id": /);
    const persona = created.json<{ id: string; name: string }>();
    expect(persona.name).toBe("Api Nova");

    const file = join(dir, "second.json");
    await writeFile(file, JSON.stringify({ name: "Api Atlas", instructions: "Be kind." }));
    const fromFile = await api(["personas_create", "--data", `@${file}`, "--json"]);
    expect(fromFile.code, fromFile.stderr).toBe(0);
    // One line with --json.
    expect(fromFile.stdout.trim().split("\n")).toHaveLength(1);
    expect(fromFile.json()).toMatchObject({ name: "Api Atlas" });

    const got = await api(["personas_get", "--id", persona.id, "--json"]);
    expect(got.code, got.stderr).toBe(0);
    expect(got.json()).toMatchObject({ id: persona.id, name: "Api Nova" });

    const listed = await api(["personas_list", "--limit", "1", "--sort", "name", "--json"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.json()).toMatchObject({ data: [{ name: "Api Atlas" }], total: 2, limit: 1, offset: 0 });
    // The contract's own spelling of a flag works too.
    const second = await api(["personas_list", "--limit=1", "--offset", "1", "--sort=name", "--json"]);
    expect(second.json()).toMatchObject({ data: [{ name: "Api Nova" }], offset: 1 });

    const conversation = await api(["conversations_create", "--data", "@-", "--json"], { input: JSON.stringify({ persona_id: persona.id, title: "From stdin" }) });
    expect(conversation.code, conversation.stderr).toBe(0);
    expect(conversation.json()).toMatchObject({ persona_id: persona.id, title: "From stdin" });
  });

  it("uploads a file as multipart (knowledge), with the contract's flag spelling", async () => {
    const persona = (await api(["personas_create", "--data", JSON.stringify({ name: "Api Librarian", instructions: "Cite." }), "--json"])).json<{ id: string }>();
    const notes = join(dir, "étoiles.md");
    await writeFile(notes, "# Stars\n\nBetelgeuse is a red supergiant in Orion.\n");
    const uploaded = await api(["knowledge_upload", "--persona_id", persona.id, "--file", notes, "--json"]);
    expect(uploaded.code, uploaded.stderr).toBe(0);
    const document = uploaded.json<{ id: string; filename: string; status: string }>();
    expect(document).toMatchObject({ filename: "étoiles.md", status: "processing" });
    const listed = await api(["knowledge_list", "--persona-id", persona.id, "--json"]);
    expect(listed.json<{ data: { id: string }[] }>().data.map((d) => d.id)).toEqual([document.id]);

    const missing = await api(["knowledge_upload", "--persona-id", persona.id, "--file", join(dir, "missing.md")]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(`persona: ${join(dir, "missing.md")}: no such file\n`);
  });

  it("streams a reply as one JSON line per event", async () => {
    const persona = (await api(["personas_create", "--data", JSON.stringify({ name: "Api Streamer", instructions: "Be brief." }), "--json"])).json<{ id: string }>();
    const conversation = (await api(["conversations_create", "--data", JSON.stringify({ persona_id: persona.id }), "--json"])).json<{ id: string }>();
    const streamed = await api(["conversations_stream_message", "--id", conversation.id, "--data", '{"content":"Hello there!"}']);
    expect(streamed.code, streamed.stderr).toBe(0);
    const events = streamed.stdout.trim().split("\n").map((line) => JSON.parse(line) as { event: string; data: Record<string, unknown> });
    expect(events.length).toBeGreaterThan(2);
    // The generation's id first (a dropped stream resumes by it), then the deltas, then done.
    expect(events[0]).toMatchObject({ event: "start", data: { generation_id: expect.any(String) } });
    expect(events.slice(1, -1).every((e) => e.event === "delta" && typeof e.data.content === "string")).toBe(true);
    expect(events.at(-1)).toMatchObject({ event: "done", data: { message_id: expect.any(String) } });
    const messages = await api(["conversations_list_messages", "--id", conversation.id, "--limit", "1", "--json"]);
    expect(messages.json()).toMatchObject({ data: [{ id: events.at(-1)!.data.message_id, role: "assistant" }] });
  });

  it("writes a binary answer to --output, follows no redirect, and calls credential-free operations without a login", async () => {
    const image = await api(["images_generate", "--data", '{"prompt":"A lighthouse at dusk"}', "--json"]);
    expect(image.code, image.stderr).toBe(0);
    const name = new URL(image.json<{ url: string }>().url).pathname.split("/").pop()!;
    const png = join(dir, "lighthouse.png");
    const saved = await api(["images_file", "--name", name, "-o", png]);
    expect(saved.code, saved.stderr).toBe(0);
    expect([...(await readFile(png)).subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

    const persona = (await api(["personas_create", "--data", JSON.stringify({ name: "Api Shared", instructions: "Hi.", is_public: true }), "--json"])).json<{ id: string }>();
    const share = (await api(["social_share", "--persona-id", persona.id, "--data", '{"platform":"microblog"}', "--json"])).json<{ share_url: string }>();
    const code = share.share_url.split("/").pop()!;
    const anonymous = { PERSONA_CONFIG_DIR: await tempConfigDir(), PERSONA_BASE_URL: service.url };
    const opened = await api(["social_open_share", "--code", code, "--json"], { env: anonymous });
    expect(opened.code, opened.stderr).toBe(0);
    expect(opened.json()).toMatchObject({ status: 302, location: expect.stringContaining(persona.id) });

    const health = await api(["ops_healthz", "--json"], { env: anonymous });
    expect(health.code, health.stderr).toBe(0);
    expect(health.json()).toEqual({ status: "ok" });
    const categories = await api(["marketplace_categories", "--json"], { env: anonymous });
    expect(categories.code, categories.stderr).toBe(0);
  });

  it("other areas: rooms, studio, social, webhooks, keys, conversations search", async () => {
    const persona = (await api(["personas_create", "--data", JSON.stringify({ name: "Api Host", instructions: "Host." }), "--json"])).json<{ id: string }>();
    const room = await api(["rooms_create", "--data", JSON.stringify({ name: "Api room", persona_ids: [persona.id] }), "--json"]);
    expect(room.code, room.stderr).toBe(0);
    const roomId = room.json<{ id: string }>().id;
    expect((await api(["rooms_get", "--id", roomId, "--json"])).json()).toMatchObject({ id: roomId, name: "Api room" });

    const version = await api(["studio_create_version", "--persona-id", persona.id, "--data", '{"instructions":"Host briefly."}', "--json"]);
    expect(version.code, version.stderr).toBe(0);
    expect(version.json()).toMatchObject({ version: 2 });
    expect((await api(["studio_list_versions", "--persona-id", persona.id, "--json"])).json<{ data: unknown[] }>().data).toHaveLength(2);

    const search = await api(["social_search", "--q", user.username, "--json"]);
    expect(search.code, search.stderr).toBe(0);
    expect(search.json<{ data: { id: string }[] }>().data.map((u) => u.id)).toContain(user.id);

    const hooks = await api(["webhooks_list", "--json"]);
    expect(hooks.code, hooks.stderr).toBe(0);
    expect(hooks.json()).toMatchObject({ data: [] });

    const key = await api(["api_keys_create_simple", "--data", '{"name":"reader","scopes":["read"]}', "--json"]);
    expect(key.code, key.stderr).toBe(0);
    expect(key.json()).toMatchObject({ scopes: ["read"], key: expect.stringMatching(/^pk_/) });

    const hits = await api(["conversations_search", "--q", "nothing-matches-this", "--json"]);
    expect(hits.code, hits.stderr).toBe(0);
    expect(hits.json()).toMatchObject({ data: [] });
  });
});

describe("errors keep the exit codes of every command", { timeout: SLOW }, () => {
  it("404 exits 4, 400 exits 1 with the field errors, 403 and no login exit 3; --json errors are JSON on stderr", async () => {
    const missing = await api(["personas_get", "--id", MISSING]);
    expect(missing.code).toBe(4);
    expect(missing.stdout).toBe("");
    expect(missing.stderr).toMatch(/^persona: .+ \(not_found, request [\w-]+\)\n$/);
    const missingJson = await api(["personas_get", "--id", MISSING, "--json"]);
    expect(JSON.parse(missingJson.stderr)).toMatchObject({ error: { code: "not_found", exit_code: 4, status: 404 } });

    const invalid = await api(["personas_create", "--data", '{"name":"","instructions":"x"}']);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/^persona: .*name.*\(invalid_request, request /);

    const other = await registerUser(service);
    const reader = await apiKeyFor(service, other, ["read"]);
    const keyEnv = { PERSONA_CONFIG_DIR: await tempConfigDir(), PERSONA_BASE_URL: service.url };
    const refused = await runCli(["api", "personas_create", "--data", '{"name":"x","instructions":"y"}', "--api-key", reader], { env: keyEnv });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain("(forbidden, request ");
    const allowed = await runCli(["api", "personas_list", "--api-key", reader, "--json"], { env: keyEnv });
    expect(allowed.code, allowed.stderr).toBe(0);

    const noLogin = await api(["personas_list"], { env: keyEnv });
    expect(noLogin.code).toBe(3);
    expect(noLogin.stderr).toMatch(/^persona: not logged in to /);
  });
});
