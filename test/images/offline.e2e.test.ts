import { beforeAll, describe, expect, it } from "vitest";
import { PNG } from "pngjs";
import { createClient, NotFoundError } from "../../sdk/src/index.ts";
import { expectError } from "../support/assertions.ts";
import { useTestService } from "../support/fixtures.ts";
import type { TestService } from "../support/service.ts";
import { apiKeyFor, type TestUser } from "../support/users.ts";
import { colours, fetchPng, generate, pathOf } from "./helpers.ts";
import { runCli } from "../cli/run-cli.ts";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

// The offline default: deterministic procedural PNGs, kept in the blob store, served by link.
let service: TestService;
let alice: TestUser;

const fixture = useTestService();
beforeAll(() => void ({ service, alice } = fixture));

const FILE_URL = /^http:\/\/127\.0\.0\.1:\d+\/v1\/images\/files\/[0-9a-f]{32}\.png$/;
const imageCount = async () => Number((await service.services.db.knex("images").count<{ count: string }[]>("* as count"))[0]!.count);

describe("generating images offline", () => {
  it("draws a 1024x1024 avatar by default, served by an unguessable link with long-lived cache headers", async () => {
    const response = await generate(service, alice.auth, { prompt: "Portrait of a retired starship captain with silver hair" });
    const body = await response.json();
    expect(response.status, JSON.stringify(body)).toBe(200);
    expect(body).toEqual({ url: expect.stringMatching(FILE_URL), width: 1024, height: 1024 });
    const { png, response: file } = await fetchPng(service, body.url);
    expect(file.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect([png.width, png.height]).toEqual([1024, 1024]);
    expect(colours(png)).toBeGreaterThan(8);
  });

  it.each([
    ["banner", "16:9", 1024, 576],
    ["scene", "9:16", 576, 1024],
    ["scene", "4:3", 1024, 768],
    ["avatar", "16:9", 1024, 576],
    ["banner", "1:1", 1024, 1024],
  ])("draws a %s at %s as %ix%i, never blank", async (style, ratio, width, height) => {
    const body = await (await generate(service, alice.auth, { prompt: "A starship bridge at night over a ringed planet", style, aspect_ratio: ratio })).json();
    expect(body).toMatchObject({ width, height });
    const { png } = await fetchPng(service, body.url);
    expect([png.width, png.height]).toEqual([width, height]);
    expect(colours(png)).toBeGreaterThan(8);
  });

  it("is deterministic: the same prompt, style and ratio give the same picture under a new name; another prompt another picture", async () => {
    const ask = async (prompt: string) => (await generate(service, alice.auth, { prompt, style: "banner", aspect_ratio: "16:9" })).json();
    const [a, b, c] = [await ask("Lighthouse on a stormy sea"), await ask("Lighthouse on a stormy sea"), await ask("Desert caravan at dawn")];
    expect(a.url).not.toBe(b.url);
    const [pa, pb, pc] = [await fetchPng(service, a.url), await fetchPng(service, b.url), await fetchPng(service, c.url)];
    expect(pa.bytes.equals(pb.bytes)).toBe(true);
    expect(pa.bytes.equals(pc.bytes)).toBe(false);
    const avatarA = await (await generate(service, alice.auth, { prompt: "Captain Nova" })).json();
    const avatarB = await (await generate(service, alice.auth, { prompt: "Professor Quill" })).json();
    expect((await fetchPng(service, avatarA.url)).bytes.equals((await fetchPng(service, avatarB.url)).bytes)).toBe(false);
  });

  it("takes prompts of exactly 3 and 500 characters", async () => {
    expect((await generate(service, alice.auth, { prompt: "owl", style: "scene" })).status).toBe(200);
    expect((await generate(service, alice.auth, { prompt: "o".repeat(500), style: "scene" })).status).toBe(200);
  });

  it.each([
    ["a 2-character prompt", { prompt: "ab" }, "/body/prompt"],
    ["a 501-character prompt", { prompt: "a".repeat(501) }, "/body/prompt"],
    ["no prompt", { style: "avatar" }, "/body/prompt"],
    ["an unknown style", { prompt: "A cat", style: "poster" }, "/body/style"],
    ["an unknown aspect ratio", { prompt: "A cat", aspect_ratio: "2:1" }, "/body/aspect_ratio"],
  ])("refuses %s with 400 and stores nothing", async (_what, body, path) => {
    const before = await imageCount();
    const error = await expectError(await generate(service, alice.auth, body), 400, "invalid_request");
    expect(error.error.details.errors.map((e: { path: string }) => e.path)).toContain(path);
    expect(await imageCount()).toBe(before);
  });

  it("needs a credential with personas:write to generate", async () => {
    await expectError(await generate(service, {}, { prompt: "A cat" }), 401, "unauthorized");
    const reader = await apiKeyFor(service, alice, ["personas:read"]);
    await expectError(await generate(service, { "x-api-key": reader }, { prompt: "A cat" }), 403, "forbidden");
  });

  it("serves links to anyone holding them, 404 for a name never issued, 400 for a malformed one", async () => {
    const body = await (await generate(service, alice.auth, { prompt: "A lantern in the fog", style: "scene" })).json();
    // No credential: a public persona's avatar must show for everyone.
    expect((await service.fetch(pathOf(body.url))).status).toBe(200);
    await expectError(await service.fetch(`/v1/images/files/${"0".repeat(32)}.png`), 404, "not_found");
    await expectError(await service.fetch("/v1/images/files/..%2F..%2Fetc%2Fpasswd"), 400, "invalid_request");
  });

  it("records each image for its owner, with its prompt and link (kept as its path: server/toolkit/links.ts)", async () => {
    const body = await (await generate(service, alice.auth, { prompt: "A quiet harbour at dusk", style: "banner", aspect_ratio: "16:9" })).json();
    const row = await service.services.db.knex("images").where({ url: pathOf(body.url) }).first();
    expect(row).toMatchObject({ user_id: alice.id, persona_id: null, style: "banner", aspect_ratio: "16:9", prompt: "A quiet harbour at dusk", provider: "local", width: 1024, height: 576 });
  });
});

describe("the SDK", () => {
  it("generates with images.generate and fetches the PNG with images.download", async () => {
    const client = createClient({ baseUrl: service.url, accessToken: alice.accessToken, refreshToken: alice.refreshToken });
    const image = await client.images.generate({ prompt: "A lantern in the fog", style: "scene", aspect_ratio: "4:3" });
    expect(image).toMatchObject({ width: 1024, height: 768 });
    const png = PNG.sync.read(Buffer.from(await client.images.download(image.url)));
    expect([png.width, png.height]).toEqual([1024, 768]);
    await expect(client.images.download(image.url.replace(/[0-9a-f]{32}/, "0".repeat(32)))).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe("the CLI", () => {
  it("generates an image, prints its link and saves the PNG", async () => {
    const key = await apiKeyFor(service, alice, ["personas:write"]);
    const file = join(await mkdtemp(join(tmpdir(), "persona-image-")), "harbour.png");
    const made = await runCli(["image", "A harbour at dusk", "--style", "banner", "--aspect", "16:9", "-o", file, "--json", "--base-url", service.url, "--api-key", key]);
    expect(made.code, made.stderr).toBe(0);
    expect(made.json()).toEqual({ url: expect.stringMatching(FILE_URL), width: 1024, height: 576, file });
    const png = PNG.sync.read(await readFile(file));
    expect([png.width, png.height]).toEqual([1024, 576]);
  });
});
