import { setTimeout as sleep } from "node:timers/promises";
import { archiveOf, purgeDeletedAccounts } from "../support/account-data.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateAvatar } from "../../server/areas/personas/avatar-job.ts";
import type { ImageProvider } from "../../server/toolkit/providers/images/types.ts";
import { LocalImages } from "../../server/toolkit/providers/images/local.ts";
import { MemoryBlobStore } from "../../server/toolkit/providers/blobs/memory.ts";
import type { Services } from "../../server/toolkit/services.ts";
import { expectError } from "../support/assertions.ts";
import { jsonHeaders, startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { fetchPng, generate, pathOf } from "./helpers.ts";

// Automatic avatars (a job, from the persona's name and description), and images in the export and the purge.
let service: TestService;
let alice: TestUser;
const blobs = new MemoryBlobStore();

beforeAll(async () => {
  service = await startTestService({ providers: { blobs } });
  alice = await registerUser(service);
});

afterAll(async () => {
  await service?.close();
});

async function create(user: TestUser, fields: Record<string, unknown> = {}) {
  const response = await service.fetch("/v1/personas", {
    method: "POST",
    headers: { ...jsonHeaders, ...user.auth },
    body: JSON.stringify({ name: "Captain Nova", instructions: "You are Captain Nova.", greeting_message: "Ahoy!", ...fields }),
  });
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(201);
  return body;
}

async function read(user: TestUser, id: string) {
  return (await service.fetch(`/v1/personas/${id}`, { headers: user.auth })).json();
}

async function eventually<T>(check: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    await sleep(50);
  }
}

describe("automatic avatars", () => {
  it("gives a persona created without an avatar a 512x512 one within seconds, leaving updated_at alone", async () => {
    const made = await create(alice, { description: "A retired starship captain" });
    expect(made.avatar_url).toBeNull();
    const url = await eventually(async () => (await read(alice, made.id)).avatar_url ?? undefined);
    const after = await read(alice, made.id);
    expect(after).toEqual({ ...made, avatar_url: url });
    const { png } = await fetchPng(service, url);
    expect([png.width, png.height]).toEqual([512, 512]);
    const row = await service.services.db.knex("images").where({ persona_id: made.id }).first();
    expect(row).toMatchObject({ user_id: alice.id, style: "avatar", prompt: "Captain Nova: A retired starship captain", url });
  });

  it("is not drawn for a persona created with an avatar", async () => {
    const made = await create(alice, { avatar_url: "https://cdn.persona.example/nova.png" });
    // Give a job that should not exist time to show up if it did.
    await sleep(1500);
    expect((await read(alice, made.id)).avatar_url).toBe("https://cdn.persona.example/nova.png");
    expect(await service.services.db.knex("images").where({ persona_id: made.id })).toEqual([]);
  });

  it("loses to an avatar the owner set while it was being drawn; the drawn one is thrown away", async () => {
    const [{ id }] = await service.services.db.knex("personas").insert({
      id: crypto.randomUUID(), creator_id: alice.id, name: "Quill", description: "", instructions: "You are Quill.", model: service.services.config.llm.model,
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
    const put = await service.fetch(`/v1/personas/${id}`, { method: "PUT", headers: { ...jsonHeaders, ...alice.auth }, body: JSON.stringify({ avatar_url: "https://cdn.persona.example/quill.png" }) });
    expect(put.status).toBe(200);
    const blobsBefore = blobs.blobs.size;
    answer();
    await job;
    expect((await read(alice, id)).avatar_url).toBe("https://cdn.persona.example/quill.png");
    expect(await service.services.db.knex("images").where({ persona_id: id })).toEqual([]);
    expect(blobs.blobs.size).toBe(blobsBefore);
  });

  it("is not queued when image generation is switched off", async () => {
    const off = await startTestService({ env: { IMAGES_PROVIDER: "off" } });
    try {
      const bob = await registerUser(off);
      await expectError(await generate(off, bob.auth, { prompt: "A cat" }), 503, "provider_unavailable");
      const response = await off.fetch("/v1/personas", { method: "POST", headers: { ...jsonHeaders, ...bob.auth }, body: JSON.stringify({ name: "Nova", instructions: "x", greeting_message: "Hi" }) });
      const made = await response.json();
      const jobs = await off.services.db.knex("graphile_worker.jobs").where({ task_identifier: "persona_avatar" });
      expect(jobs).toEqual([]);
      expect((await (await off.fetch(`/v1/personas/${made.id}`, { headers: bob.auth })).json()).avatar_url).toBeNull();
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
