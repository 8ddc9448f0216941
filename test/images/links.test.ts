import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { up as relativeImageLinks } from "../../server/toolkit/db/migrations/0031_relative_image_links.ts";
import { MemoryBlobStore } from "../../server/toolkit/providers/blobs/memory.ts";
import { archiveOf } from "../support/account-data.ts";
import { expectOk } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { until } from "../support/wait.ts";
import { fetchPng, pathOf } from "./helpers.ts";

// Links to the service's own images follow its address (issue 34, item 10): they are stored as paths
// and made absolute from PUBLIC_BASE_URL when read, so a persona's avatar made while the service
// answered at one address reads, and serves its bytes, at the next one. Migration 0031 turns the
// absolute links stored before into paths.
const OLD = "https://old.persona.test";
const NEW = "https://new.persona.test:8443/persona";
const FILE_LINK = /\/v1\/images\/files\/[0-9a-f]{32}\.png$/;
const blobs = new MemoryBlobStore();
let before: TestService;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  before = await startTestService({ env: { PUBLIC_BASE_URL: OLD, AUTO_AVATARS: "true" }, providers: { blobs } });
  alice = await registerUser(before);
  bob = await registerUser(before);
});
afterAll(async () => {
  await before?.close();
});

/** A second process on the same database and blob store, answering at another address. */
async function movedTo(env: Record<string, string>): Promise<TestService> {
  return startTestService({ database: before.database, providers: { blobs }, env: { ...env, DATABASE_URL: before.services.db.url!, WORKER_ENABLED: "false" } });
}

const persona = (service: TestService, user: TestUser, id: string) => expectOk(service.clientFor(user).GET("/v1/personas/{id}", { params: { path: { id } } }));

describe("links to the service's own images", () => {
  let beaconId: string;
  let avatar: string;
  let imageUrl: string;
  let avatarBytes: Buffer;

  it("are shown absolute at the address of the day and stored as paths", async () => {
    const made = await expectOk(before.clientFor(alice).POST("/v1/personas", { body: { name: "Beacon", instructions: "You keep the light.", greeting_message: "Hello", is_public: true } }), 201);
    beaconId = made.id;
    avatar = await until("the automatic avatar", async () => (await persona(before, alice, made.id)).avatar_url);
    expect(avatar.startsWith(`${OLD}/v1/images/files/`)).toBe(true);
    expect(avatar).toMatch(FILE_LINK);
    avatarBytes = (await fetchPng(before, avatar)).bytes;
    const stored = await before.services.db.knex("personas").where({ id: made.id }).first();
    expect(stored.avatar_url).toBe(pathOf(avatar));

    const image = await expectOk(before.clientFor(alice).POST("/v1/images/generate", { body: { prompt: "A lighthouse", style: "scene" } }));
    imageUrl = image.url;
    expect(image.url.startsWith(`${OLD}/v1/images/files/`)).toBe(true);
    expect((await before.services.db.knex("images").where({ url: pathOf(image.url) }).first()).user_id).toBe(alice.id);
  });

  it("stores an avatar set to one of the service's own image links as its path, and any other link as given", async () => {
    const set = await expectOk(before.clientFor(alice).PUT("/v1/personas/{id}", { params: { path: { id: beaconId } }, body: { avatar_url: imageUrl } }));
    expect(set.avatar_url).toBe(imageUrl);
    expect((await before.services.db.knex("personas").where({ id: beaconId }).first()).avatar_url).toBe(pathOf(imageUrl));
    const elsewhere = await expectOk(before.clientFor(bob).POST("/v1/personas", { body: { name: "Cdn", instructions: "x", greeting_message: "Hi", avatar_url: "https://cdn.persona.example/avatars/cdn.png" } }), 201);
    expect(elsewhere.avatar_url).toBe("https://cdn.persona.example/avatars/cdn.png");
    expect((await before.services.db.knex("personas").where({ id: elsewhere.id }).first()).avatar_url).toBe("https://cdn.persona.example/avatars/cdn.png");
    // Back to the automatic avatar for what follows.
    await expectOk(before.clientFor(alice).PUT("/v1/personas/{id}", { params: { path: { id: beaconId } }, body: { avatar_url: avatar } }));
  });

  it("read at the new address after PUBLIC_BASE_URL changes, everywhere an avatar is shown, and serve the same bytes there", async () => {
    await expectOk(before.clientFor(bob).POST("/v1/social/likes/{persona_id}", { params: { path: { persona_id: beaconId } } }));
    const after = await movedTo({ PUBLIC_BASE_URL: NEW });
    try {
      const moved = `${NEW}${pathOf(avatar)}`;
      expect((await persona(after, alice, beaconId)).avatar_url).toBe(moved);
      // Bob sees it in the explore list, his likes and the public persona; Alice in her own list.
      const explore = await expectOk(after.clientFor(bob).GET("/v1/personas/explore", { params: { query: { q: "Beacon", limit: 100 } } }));
      expect(explore.data.find((item) => item.id === beaconId)?.avatar_url).toBe(moved);
      const likes = await expectOk(after.clientFor(bob).GET("/v1/social/likes", { params: { query: { limit: 100 } } }));
      expect(likes.data.find((item) => item.persona_id === beaconId)?.avatar_url).toBe(moved);
      const own = await expectOk(after.clientFor(alice).GET("/v1/personas", { params: { query: { limit: 100 } } }));
      expect(own.data.find((item) => item.id === beaconId)?.avatar_url).toBe(moved);
      // The file answers at the new address (its path below the new base is the same file).
      const served = await after.fetch(new URL(moved).pathname.replace(/^\/persona/, ""));
      expect(served.status).toBe(200);
      expect(Buffer.from(await served.arrayBuffer()).equals(avatarBytes)).toBe(true);
      // The data export gives the links of the day too.
      const archive = await archiveOf(after.services, alice.id);
      expect((archive.personas as { id: string; avatar_url: string }[]).find((row) => row.id === beaconId)?.avatar_url).toBe(moved);
      expect((archive.images as { url: string }[]).map((row) => row.url)).toContain(`${NEW}${pathOf(imageUrl)}`);
    } finally {
      await after.close();
    }
  });

  it("read at the listening address when PUBLIC_BASE_URL is unset", async () => {
    const after = await movedTo({});
    try {
      expect((await persona(after, alice, beaconId)).avatar_url).toBe(`${after.url}${pathOf(avatar)}`);
      expect((await fetchPng(after, `${after.url}${pathOf(avatar)}`)).bytes.equals(avatarBytes)).toBe(true);
    } finally {
      await after.close();
    }
  });

  it("are made paths by migration 0031 when stored absolute before, only where they name one of the service's files", async () => {
    const { knex } = before.services.db;
    await knex("users").where({ id: bob.id }).update({ plan: "creator" });
    const image = await knex("images").where({ url: pathOf(imageUrl) }).first();
    const cardFile = `${"c".repeat(32)}.png`;
    await knex("card_avatars").insert({ file_name: cardFile, user_id: bob.id, persona_id: null, created_at: new Date() });
    const legacy = async (name: string, avatarUrl: string) => {
      const made = await expectOk(before.clientFor(bob).POST("/v1/personas", { body: { name, instructions: "x", greeting_message: "Hi", avatar_url: "https://cdn.persona.example/x.png" } }), 201);
      await knex("personas").where({ id: made.id }).update({ avatar_url: avatarUrl });
      return made.id as string;
    };
    const ours = await legacy("Ours", `http://127.0.0.1:3000/v1/images/files/${image.file_name}`);
    const card = await legacy("Card", `https://persona.example.org/prefix/v1/images/files/${cardFile}`);
    const lookalike = await legacy("Lookalike", `https://other.example/v1/images/files/${"0".repeat(32)}.png`);
    const cdn = await legacy("Cdn", "https://cdn.persona.example/avatars/cdn.png");
    await knex("images").where({ id: image.id }).update({ url: `http://127.0.0.1:3000/v1/images/files/${image.file_name}` });

    await relativeImageLinks(knex);
    await relativeImageLinks(knex);

    const avatarOf = async (id: string) => (await knex("personas").where({ id }).first()).avatar_url as string;
    expect(await avatarOf(ours)).toBe(`/v1/images/files/${image.file_name}`);
    expect(await avatarOf(card)).toBe(`/v1/images/files/${cardFile}`);
    expect(await avatarOf(lookalike)).toBe(`https://other.example/v1/images/files/${"0".repeat(32)}.png`);
    expect(await avatarOf(cdn)).toBe("https://cdn.persona.example/avatars/cdn.png");
    expect((await knex("images").where({ id: image.id }).first()).url).toBe(`/v1/images/files/${image.file_name}`);
    expect((await persona(before, bob, ours)).avatar_url).toBe(`${OLD}/v1/images/files/${image.file_name}`);
  });
});
