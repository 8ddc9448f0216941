// The SDK's studio and marketplace helpers against the real service.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { BadRequestError, createClient, NotFoundError } from "../../sdk/src/index.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ env: { AUTO_AVATARS: "false" } });
});
afterAll(async () => {
  await service?.close();
});

describe("client.studio and client.marketplace", () => {
  test("versions, test chat, variants, analytics, publish, browse, rate and use", { timeout: 120_000 }, async () => {
    const [creator, fan] = [await registerUser(service), await registerUser(service)];
    const studioClient = createClient({ baseUrl: service.url, accessToken: creator.accessToken, refreshToken: creator.refreshToken });
    const client = createClient({ baseUrl: service.url, accessToken: fan.accessToken, refreshToken: fan.refreshToken });
    const persona = await studioClient.personas.create({ name: "SDK Nova", instructions: "Be brief.", description: "Space facts.", greeting_message: "Hi." });

    const draft = await studioClient.studio.createVersion(persona.id, { instructions: "Be very brief.", changelog: "Shorter" }, { idempotencyKey: "sdk-v2" });
    expect(draft).toMatchObject({ version: 2, status: "draft" });
    expect((await studioClient.studio.versions(persona.id)).total).toBe(2);
    expect(await studioClient.studio.activateVersion(persona.id, draft.id)).toMatchObject({ status: "active" });
    const reply = await studioClient.studio.testChat(persona.id, { message: "Hello" });
    expect(reply).toMatchObject({ version_id: draft.id, input: "Hello", output: expect.any(String) });

    const variant = await studioClient.studio.createVariant(persona.id, { name: "Pirate", instructions: "Arr.", traffic_percentage: 60 });
    await expect(studioClient.studio.createVariant(persona.id, { name: "Too much", instructions: "No.", traffic_percentage: 41 })).rejects.toBeInstanceOf(BadRequestError);
    expect(await studioClient.studio.updateVariant(persona.id, variant.id, { traffic_percentage: 10 })).toMatchObject({ traffic_percentage: 10 });
    expect((await studioClient.studio.variants(persona.id)).total).toBe(1);
    expect((await studioClient.studio.analytics(persona.id, { period: "7d" })).daily_breakdown).toHaveLength(7);

    // The service is lent: other files' listings may be on the shelf; this one adds one.
    const education = async () => (await client.marketplace.categories()).data.find((c) => c.slug === "education")?.count ?? 0;
    const before = await education();
    const listing = await studioClient.studio.publish(persona.id, { category: "education", tags: ["space"], pricing: "free" });
    expect((await client.marketplace.list({ q: "space" })).data.map((l) => l.id)).toContain(listing.id);
    expect(await education()).toBe(before + 1);
    expect((await client.marketplace.featured()).data).toEqual(expect.any(Array));
    expect((await client.marketplace.get(listing.id)).data).toMatchObject({ name: "SDK Nova", sample_messages: ["Hi."] });
    expect((await client.marketplace.rate(listing.id, { rating: 5, review: "Stellar." })).data.rating).toBe(5);
    const reviews: number[] = [];
    for await (const review of client.marketplace.reviews(listing.id)) reviews.push(review.rating);
    expect(reviews).toEqual([5]);
    const { data: copy } = await client.marketplace.use(listing.id);
    expect(copy).toMatchObject({ source_listing_id: listing.id, name: "SDK Nova", status: "active" });

    await expect(client.studio.versions(persona.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.marketplace.get("0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01")).rejects.toBeInstanceOf(NotFoundError);
  });
});
