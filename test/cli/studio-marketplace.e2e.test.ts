import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser } from "../support/users.ts";
import { runCli } from "./run-cli.ts";

// `persona studio …` and `persona marketplace …` as a creator, a visitor and an operator use them.
let service: TestService;
let creatorEnv: Record<string, string>;
let fanEnv: Record<string, string>;

beforeAll(async () => {
  service = await startTestService({ env: { AUTO_AVATARS: "false" } });
  const [creator, fan] = [await registerUser(service), await registerUser(service)];
  creatorEnv = { PERSONA_BASE_URL: service.url, PERSONA_API_KEY: await apiKeyFor(service, creator) };
  fanEnv = { PERSONA_BASE_URL: service.url, PERSONA_API_KEY: await apiKeyFor(service, fan) };
});

afterAll(async () => {
  await service?.close();
});

describe("persona studio and marketplace", { timeout: 180_000 }, () => {
  it("has help with examples", async () => {
    for (const command of ["studio", "marketplace"]) {
      const result = await runCli([command, "--help"]);
      expect(result.code, command).toBe(0);
      expect(result.stdout, command).toContain("Examples:");
    }
  });

  it("versions, tests, publishes, rates, copies and features", async () => {
    const created = await runCli(["personas", "create", "--name", "Cli Nova", "--instructions", "Be brief.", "--json"], { env: creatorEnv });
    expect(created.code, created.stderr).toBe(0);
    const version = await runCli(["studio", "version", "Cli Nova", "--instructions", "Be briefer.", "--activate", "--json"], { env: creatorEnv });
    expect(version.code, version.stderr).toBe(0);
    expect(version.json()).toMatchObject({ version: 2, status: "active" });
    expect((await runCli(["studio", "versions", "Cli Nova"], { env: creatorEnv })).stdout).toContain("active");
    const test = await runCli(["studio", "test", "Cli Nova", "Hello"], { env: creatorEnv });
    expect(test.code, test.stderr).toBe(0);
    expect((await runCli(["studio", "variant", "Cli Nova", "--name", "Pirate", "--instructions", "Arr.", "--traffic", "20"], { env: creatorEnv })).code).toBe(0);
    expect((await runCli(["studio", "variant", "Cli Nova", "--traffic", "101"], { env: creatorEnv })).code).toBe(2);
    expect((await runCli(["studio", "analytics", "Cli Nova", "--period", "7d", "--json"], { env: creatorEnv })).json()).toMatchObject({ period: "7d" });

    const published = await runCli(["studio", "publish", "Cli Nova", "--category", "education", "--tag", "space,stars", "--json"], { env: creatorEnv });
    expect(published.code, published.stderr).toBe(0);
    const listingId = (published.json() as { id: string }).id;
    expect((await runCli(["marketplace", "list", "--q", "space"], { env: fanEnv })).stdout).toContain("Cli Nova");
    expect((await runCli(["marketplace", "rate", listingId, "5", "--review", "Stellar"], { env: fanEnv })).code).toBe(0);
    expect((await runCli(["marketplace", "reviews", listingId], { env: fanEnv })).stdout).toContain("Stellar");
    const used = await runCli(["marketplace", "use", listingId, "--json"], { env: fanEnv });
    expect(used.json()).toMatchObject({ source_listing_id: listingId });

    const dbEnv = { ...fanEnv, DATABASE_URL: service.services.db.url };
    const featured = await runCli(["marketplace", "feature", listingId, "--reason", "Staff pick"], { env: dbEnv });
    expect(featured.code, featured.stderr).toBe(0);
    expect((await runCli(["marketplace", "featured", "--json"], { env: fanEnv })).json()).toMatchObject({ data: [{ id: listingId, featured_reason: "Staff pick" }] });
    expect((await runCli(["marketplace", "unfeature", listingId], { env: dbEnv })).code).toBe(0);
    expect((await runCli(["marketplace", "feature", "0193a6e1-5c2d-7f10-8a4b-3c9d2e1f0a77", "--reason", "x"], { env: dbEnv })).code).toBe(4);
    expect((await runCli(["marketplace", "show", "not-an-id"], { env: fanEnv })).code).toBe(2);
  });

  it("publishes to every shelf the marketplace lists, by default the shelf of the persona's category (issue 34 item 3)", async () => {
    const created = await runCli(["personas", "create", "--name", "Cli Rogue", "--instructions", "Swashbuckle.", "--category", "character", "--json"], { env: creatorEnv });
    expect(created.code, created.stderr).toBe(0);
    const byDefault = await runCli(["studio", "publish", "Cli Rogue", "--tag", "pirates", "--json"], { env: creatorEnv });
    expect(byDefault.code, byDefault.stderr).toBe(0);
    const listing = byDefault.json<{ id: string; category: string }>();
    expect(listing.category).toBe("roleplay");
    const onShelf = await runCli(["marketplace", "list", "--category", "roleplay", "--q", "pirates", "--json"], { env: fanEnv });
    expect(onShelf.json<{ data: { id: string }[] }>().data.map((l) => l.id)).toEqual([listing.id]);

    const moved = await runCli(["studio", "publish", "Cli Rogue", "--category", "companion"], { env: creatorEnv });
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.stdout).toContain("Published on the companion shelf");
    const shelves = (await runCli(["marketplace", "categories", "--json"], { env: fanEnv })).json<{ data: { slug: string }[] }>().data.map((c) => c.slug);
    expect(shelves).toEqual(expect.arrayContaining(["roleplay", "companion", "assistant", "creative"]));

    // Not a shelf: refused before any request, with the shelves to choose from.
    for (const args of [["studio", "publish", "Cli Rogue", "--category", "character"], ["marketplace", "list", "--category", "cooking"]]) {
      const refused = await runCli(args, { env: creatorEnv });
      expect(refused.code, args.join(" ")).toBe(2);
      expect(refused.stderr).toContain("roleplay");
    }
  });
});
