import { archiveOf, purgeDeletedAccounts } from "../support/account-data.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateAvatar } from "../../server/areas/personas/avatar-job.ts";
import type { ImageProvider } from "../../server/toolkit/providers/images/types.ts";
import { LocalImages } from "../../server/toolkit/providers/images/local.ts";
import { MemoryBlobStore } from "../../server/toolkit/providers/blobs/memory.ts";
import type { Services } from "../../server/toolkit/services.ts";
import { expectError, expectOk } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { until } from "../support/wait.ts";
import { fetchPng, generate, pathOf } from "./helpers.ts";

// Automatic avatars (a job, from the persona's name and description), and images in the export and the purge.
let service: TestService;
let alice: TestUser;
const blobs = new MemoryBlobStore();

beforeAll(async () => {
  // Automatic avatars are off in tests unless turned on (test/support/service.ts).
  service = await startTestService({ providers: { blobs }, env: { AUTO_AVATARS: "true" } });
  alice = await registerUser(service);
});

afterAll(async () => {
  await service?.close();
});

async function create(user: TestUser, fields: { description?: string; avatar_url?: string } = {}) {
  return expectOk(service.clientFor(user).POST("/v1/personas", { body: { name: "Captain Nova", instructions: "You are Captain Nova.", greeting_message: "Ahoy!", ...fields } }), 201);
}

async function read(user: TestUser, id: string) {
  return expectOk(service.clientFor(user).GET("/v1/personas/{id}", { params: { path: { id } } }));
}

describe("automatic avatars", () => {
  it("gives a persona created without an avatar a 512x512 one within seconds, leaving updated_at alone", async () => {
    const made = await create(alice, { description: "A retired starship captain" });
    expect(made.avatar_url).toBeNull();
    const url = await until("the automatic avatar", async () => (await read(alice, made.id)).avatar_url);
    const after = await read(alice, made.id);
    expect(after).toEqual({ ...made, avatar_url: url });
    const { png } = await fetchPng(service, url);
    expect([png.width, png.height]).toEqual([512, 512]);
    const row = await service.services.db.knex("images").where({ persona_id: made.id }).first();
    // Stored as its path, shown with the service's address (server/toolkit/links.ts).
    expect(row).toMatchObject({ user_id: alice.id, style: "avatar", prompt: "Captain Nova: A retired starship captain", url: pathOf(url) });
  });

  it("is not drawn for a persona created with an avatar", async () => {
    const made = await create(alice, { avatar_url: "https://cdn.persona.example/nova.png" });
    // A job that should not exist would have run by the time a persona created after it has its
    // avatar: the worker takes its jobs in the order they were queued.
    const later = await create(alice);
    await until("the avatar of a persona created after it", async () => (await read(alice, later.id)).avatar_url);
    expect((await read(alice, made.id)).avatar_url).toBe("https://cdn.persona.example/nova.png");
    expect(await service.services.db.knex("images").where({ persona_id: made.id })).toEqual([]);
  });

  it("loses to an avatar the owner set while it was being drawn; the drawn one is thrown away", async () => {
    const [{ id }] = await service.services.db.knex("personas").insert({
      id: crypto.randomUUID(), creator_id: alice.id, name: "Quill", handle: `quill-${crypto.randomUUID().slice(0, 8)}`, description: "", instructions: "You are Quill.", model: service.services.config.llm.model,
      avatar_url: null, is_public: false, category: "other", greeting_message: "Hi", voice_id: "alloy", message_count: 0, created_at: new Date(), updated_at: new Date(),
    }).returning("id");
    let asked!: () => void;
    let answer!: () => void;
    const askedPromise = new Promise<void>((resolve) => (asked = resolve));
    const held = new Promise<void>((resolve) => (answer = resolve));
    const local = new LocalImages();
    const slow: ImageProvider = { name: "held", generate: async (request) => (asked(), await held, local.generate(request)) };
    const services: Services = { ...service.services, providers: { ...service.services.providers, images: slow } };
    const job = generateAvatar(services, id);
    await askedPromise;
    const put = await service.clientFor(alice).PUT("/v1/personas/{id}", { params: { path: { id } }, body: { avatar_url: "https://cdn.persona.example/quill.png" } });
    expect(put.response.status).toBe(200);
    const blobsBefore = blobs.blobs.size;
    answer();
    await job;
    expect((await read(alice, id)).avatar_url).toBe("https://cdn.persona.example/quill.png");
    expect(await service.services.db.knex("images").where({ persona_id: id })).toEqual([]);
    expect(blobs.blobs.size).toBe(blobsBefore);
  });

  it("is not queued when image generation is switched off", async () => {
    // Avatars on, so that it is the provider switched off that holds them back.
    const off = await startTestService({ env: { IMAGES_PROVIDER: "off", AUTO_AVATARS: "true" } });
    try {
      const bob = await registerUser(off);
      await expectError(await generate(off, bob.auth, { prompt: "A cat" }), 503, "provider_unavailable");
      const { data: made } = await off.clientFor(bob).POST("/v1/personas", { body: { name: "Nova", instructions: "x", greeting_message: "Hi" } });
      // This persona's jobs only, as the service is lent (graphile-worker's jobs view has no payload).
      const jobs = await off.services.db.knex("graphile_worker._private_jobs as j")
        .join("graphile_worker._private_tasks as t", "t.id", "j.task_id")
        .where("t.identifier", "persona_avatar")
        .whereRaw("j.payload->>'personaId' = ?", [made!.id]);
      expect(jobs).toEqual([]);
      const { data: after } = await off.clientFor(bob).GET("/v1/personas/{id}", { params: { path: { id: made!.id } } });
      expect(after!.avatar_url).toBeNull();
    } finally {
      await off.close();
    }
  });
});

describe("images in the data export and the account purge", () => {
  it("lists the user's generated images as links in the export archive", async () => {
    const carol = await registerUser(service);
    const image = await (await generate(service, carol.auth, { prompt: "A lighthouse", style: "scene" })).json();
    const archive = await archiveOf(service.services, carol.id);
    expect(archive.images).toEqual([expect.objectContaining({ url: image.url, prompt: "A lighthouse", style: "scene", width: 1024, height: 1024 })]);
  });

  it("deletes the image files of a purged account; other users' files stay", async () => {
    const dave = await registerUser(service);
    const erin = await registerUser(service);
    const gone = await (await generate(service, dave.auth, { prompt: "Dave's picture" })).json();
    const kept = await (await generate(service, erin.auth, { prompt: "Erin's picture" })).json();
    await service.services.db.knex("users").where({ id: dave.id }).update({ deleted_at: new Date(Date.now() - 31 * 24 * 3600 * 1000) });
    const result = await purgeDeletedAccounts(service.services);
    expect(result.users).toBeGreaterThanOrEqual(1);
    await expectError(await service.fetch(pathOf(gone.url)), 404, "not_found");
    expect(await service.services.db.knex("images").where({ user_id: dave.id })).toEqual([]);
    expect((await service.fetch(pathOf(kept.url))).status).toBe(200);
  });
});
