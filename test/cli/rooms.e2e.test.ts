import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";
import { runCli } from "./run-cli.ts";

// `persona rooms ...` as a person or a script uses them, against the offline model.
let service: TestService;
let owner: TestUser;
let env: Record<string, string>;
let guestEnv: Record<string, string>;

beforeAll(async () => {
  service = await startTestService({ env: { AUTO_AVATARS: "false" } });
  owner = await registerUser(service);
  const guest = await registerUser(service, { username: "cli_guest" });
  env = { PERSONA_BASE_URL: service.url, PERSONA_API_KEY: await apiKeyFor(service, owner) };
  guestEnv = { PERSONA_BASE_URL: service.url, PERSONA_API_KEY: await apiKeyFor(service, guest) };
});

afterAll(async () => {
  await service?.close();
});

describe("persona rooms", { timeout: 180_000 }, () => {
  it("has help with examples", async () => {
    for (const command of ["rooms", "rooms create", "rooms send", "rooms messages", "rooms add-member", "rooms leave"]) {
      const result = await runCli([...command.split(" "), "--help"]);
      expect(result.code, command).toBe(0);
      expect(result.stdout, command).toContain("Examples:");
    }
  });

  it("creates a room with a persona by name, adds a member by username, sends, reads, leaves and deletes", async () => {
    const persona = await runCli(["personas", "create", "--name", "Nova", "--instructions", "Be brief.", "--json"], { env });
    expect(persona.code, persona.stderr).toBe(0);
    const created = await runCli(["rooms", "create", "Stargazers", "--persona", "Nova", "--json"], { env });
    expect(created.code, created.stderr).toBe(0);
    const room = created.json() as { id: string; personas: { name: string }[] };
    expect(room.personas.map((p) => p.name)).toEqual(["Nova"]);
    expect((await runCli(["rooms", "add-member", room.id, "@cli_guest"], { env })).code).toBe(0);

    const sent = await runCli(["rooms", "send", room.id, "@nova", "hello"], { env: guestEnv });
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stdout).toMatch(/^Nova: /m);
    const messages = await runCli(["rooms", "messages", room.id, "--json"], { env });
    expect((messages.json() as { total: number }).total).toBe(2);
    const list = await runCli(["rooms", "list"], { env });
    expect(list.stdout).toContain("Stargazers");

    const quiet = await runCli(["rooms", "update", room.id, "--reply-mode", "mentions_only", "--json"], { env });
    expect(quiet.json()).toMatchObject({ reply_mode: "mentions_only" });
    expect((await runCli(["rooms", "update", room.id, "--reply-mode", "loud"], { env })).code).toBe(2);

    expect((await runCli(["rooms", "leave", room.id], { env: guestEnv })).code).toBe(0);
    const hidden = await runCli(["rooms", "show", room.id], { env: guestEnv });
    expect(hidden.code).toBe(4);
    expect((await runCli(["rooms", "delete", room.id], { env })).code).toBe(0);
  });

  it("exits 2 for usage errors and 1 for a refused request", async () => {
    expect((await runCli(["rooms", "send"], { env })).code).toBe(2);
    expect((await runCli(["rooms", "list", "--limit", "0"], { env })).code).toBe(2);
    const long = await runCli(["rooms", "create", "n".repeat(101)], { env });
    expect(long.code).toBe(1);
    expect(long.stderr).toContain("invalid_request");
  });
});
