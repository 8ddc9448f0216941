import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";
import { cardChunks, pngCard, v2Card, v3Card } from "../cards/helpers.ts";
import { runCli } from "./run-cli.ts";

// `persona import <card>` and `persona export <persona> -o card.png`, through the SDK; `persona
// export` without a persona stays the account data export.
let service: TestService;
let user: TestUser;
let env: Record<string, string>;
let dir: string;

beforeAll(async () => {
  service = await startTestService({ env: { AUTO_AVATARS: "false" } });
  user = await registerUser(service);
  env = { PERSONA_BASE_URL: service.url, PERSONA_API_KEY: await apiKeyFor(service, user) };
  dir = await mkdtemp(join(tmpdir(), "persona-cards-"));
});

afterAll(async () => {
  await service?.close();
});

describe("persona import / export of character cards", { timeout: 120_000 }, () => {
  it("has help with examples, and export's help keeps the data export", async () => {
    for (const command of ["import", "export"]) {
      const result = await runCli([command, "--help"]);
      expect(result.code, command).toBe(0);
      expect(result.stdout, command).toContain("Examples:");
    }
    expect((await runCli(["export", "--help"])).stdout).toMatch(/Without <persona> this is the account data export/);
  });

  it("imports a PNG card and exports it back as PNG and JSON, unicode intact", async () => {
    const png = join(dir, "nova.png");
    await writeFile(png, pngCard({ ccv3: v3Card() }));
    const imported = await runCli(["import", png, "--json"], { env });
    expect(imported.code, imported.stderr).toBe(0);
    const persona = imported.json<{ id: string; name: string; avatar_url: string }>();
    expect(persona.name).toBe("Captain Nóva 星");

    const out = join(dir, "out.png");
    const exported = await runCli(["export", persona.id, "-o", out], { env });
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toContain("Wrote the PNG card");
    const chunks = cardChunks(await readFile(out));
    expect(chunks.ccv3).toMatchObject({ spec: "chara_card_v3", data: { name: "Captain Nóva 星", tags: ["space", "astronomy", "日本語"] } });

    // By name, JSON on stdout.
    const json = await runCli(["export", "Captain Nóva 星"], { env });
    expect(json.code, json.stderr).toBe(0);
    expect(json.json()).toEqual(chunks.ccv3);
  });

  it("imports a JSON card", async () => {
    const file = join(dir, "nova.json");
    await writeFile(file, JSON.stringify(v2Card({ name: "Json Nova" })));
    const result = await runCli(["import", file], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("Json Nova");
  });

  it("exits 1 with the service's error for a bad card, 2 for a usage error, 4 for an unknown persona", async () => {
    const file = join(dir, "bad.json");
    await writeFile(file, JSON.stringify({ spec: "chara_card_v2", data: { description: "no name" } }));
    const bad = await runCli(["import", file], { env });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("invalid_request");
    expect((await runCli(["import"], { env })).code).toBe(2);
    expect((await runCli(["export", "-o", join(dir, "x.png")], { env })).code).toBe(2);
    expect((await runCli(["export", "Nobody At All", "-o", join(dir, "x.png")], { env })).code).toBe(4);
  });

  it("without a persona, still requests the account data export", async () => {
    const result = await runCli(["export", "--json"], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.json()).toMatchObject({ status: expect.any(String), export_id: expect.any(String) });
  });
});
