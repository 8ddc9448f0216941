import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";
import { runCli } from "./run-cli.ts";

// `persona social follow | unfollow | feed | search` as a person or a script uses them.
let service: TestService;
let fan: TestUser;
let env: Record<string, string>;

beforeAll(async () => {
  service = await startTestService();
  fan = await registerUser(service);
  await registerUser(service, { username: "cli_star" });
  env = { PERSONA_BASE_URL: service.url, PERSONA_API_KEY: await apiKeyFor(service, fan) };
});

afterAll(async () => {
  await service?.close();
});

describe("persona social", { timeout: 120_000 }, () => {
  it("has help with examples", async () => {
    for (const command of ["social", "social follow", "social feed", "social search"]) {
      const result = await runCli([...command.split(" "), "--help"]);
      expect(result.code, command).toBe(0);
      expect(result.stdout, command).toContain("Examples:");
    }
  });

  it("follows by username, searches and reads the feed, as text and as JSON", async () => {
    const follow = await runCli(["social", "follow", "@cli_star", "--json"], { env });
    expect(follow.code, follow.stderr).toBe(0);
    expect(follow.json()).toMatchObject({ follower_id: fan.id });

    const search = await runCli(["social", "search", "cli_st"], { env });
    expect(search.code, search.stderr).toBe(0);
    expect(search.stdout).toContain("cli_star");
    expect((await runCli(["social", "search", "cli_st", "--json"], { env })).json()).toMatchObject({ total: 1, data: [{ username: "cli_star", follower_count: 1 }] });

    const feed = await runCli(["social", "feed", "--json"], { env });
    expect(feed.code, feed.stderr).toBe(0);
    expect(feed.json()).toEqual({ data: [], total: 0, limit: 20, offset: 0 });
    expect((await runCli(["social", "unfollow", "cli_star"], { env })).code).toBe(0);
  });

  it("exits 4 for an unknown user, 2 for usage errors, 1 for a refused query", async () => {
    const missing = await runCli(["social", "follow", "nobody_here"], { env });
    expect(missing.code).toBe(4);
    expect(missing.stderr).toMatch(/^persona: /);
    expect((await runCli(["social", "follow"], { env })).code).toBe(2);
    expect((await runCli(["social", "feed", "--limit", "0"], { env })).code).toBe(2);
    const short = await runCli(["social", "search", "x"], { env });
    expect(short.code).toBe(1);
    expect(short.stderr).toContain("invalid_request");
  });
});
