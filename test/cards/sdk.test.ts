// The SDK's card helpers against the real service: import from bytes and a Blob, export as JSON and PNG.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { BadRequestError, createClient, NotFoundError } from "../../sdk/src/index.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";
import { cardChunks, pngCard, v2Card, v3Card } from "./helpers.ts";

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ env: { AUTO_AVATARS: "false" } });
});
afterAll(async () => {
  await service?.close();
});

describe("client.personas cards", () => {
  test("imports bytes and a Blob, exports JSON and PNG that import back the same", async () => {
    const [owner, other] = [await registerUser(service), await registerUser(service)];
    const client = createClient({ baseUrl: service.url, accessToken: owner.accessToken, refreshToken: owner.refreshToken });
    const stranger = createClient({ baseUrl: service.url, accessToken: other.accessToken, refreshToken: other.refreshToken });

    const fromPng = await client.personas.importCard(pngCard({ ccv3: v3Card() }), { filename: "nova.png" });
    const fromBlob = await client.personas.importCard(new Blob([JSON.stringify(v2Card({ name: "Blob Nova" }))]), { filename: "nova.json" });
    expect(fromBlob.name).toBe("Blob Nova");

    const card = await client.personas.exportCard(fromPng.id);
    expect(card.data.character_book?.entries).toHaveLength(4);
    const png = await client.personas.exportCardPng(fromPng.id);
    expect(cardChunks(png).ccv3).toEqual(card);
    const again = await client.personas.importCard(png);
    // The copy is another persona of the same owner: its handle gets the next number.
    expect(again.handle).toBe(`${fromPng.handle}-2`);
    expect({ ...again, id: fromPng.id, handle: fromPng.handle, avatar_url: fromPng.avatar_url, created_at: fromPng.created_at, updated_at: fromPng.updated_at }).toEqual(fromPng);

    await expect(stranger.personas.exportCard(fromPng.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(stranger.personas.exportCardPng(fromPng.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.personas.importCard(new Blob(["{ nope"]), { filename: "bad.json" })).rejects.toBeInstanceOf(BadRequestError);
  });
});
