import { beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { createPersona, registerUser, type TestUser } from "./support/fixtures.ts";
import { ifLive, op } from "./support/op.ts";
import { idOr } from "./support/placeholders.ts";
import { target } from "./support/target.ts";

describe("marketplace", () => {
  let creator: TestUser;
  let visitor: TestUser;
  let listingId: string | undefined;

  beforeAll(async () => {
    [creator, visitor] = await Promise.all([registerUser("creator"), registerUser("visitor")]);
    const personaId = await createPersona(creator);
    if (!personaId) return;
    // A listing exists once a persona is published from the studio.
    const json = { category: "education", tags: ["astronomy", "storytelling"], pricing: "free" };
    const published = await ifLive(() => call("studio_publish", { token: creator.token, path: { persona_id: personaId }, json, expect: [200] }));
    listingId = (published?.json as { id: string } | undefined)?.id;
  });

  op("marketplace_categories", async () => {
    await call("marketplace_categories", { expect: [200] });
  });

  op("marketplace_featured", async () => {
    await call("marketplace_featured", { expect: [200] });
  });

  op("marketplace_list", async () => {
    const answer = await call("marketplace_list", { query: { category: "education", sort: "recent", limit: 20 }, expect: [200] });
    // Without a published listing of our own (studio not live yet), any listing will do.
    listingId ??= (answer.json as { data: { id: string }[] }).data[0]?.id;
  });

  op("marketplace_get", async () => {
    await call("marketplace_get", { path: { id: idOr(listingId) }, expect: [200] });
  });

  op("marketplace_rate", async () => {
    const json = { rating: 5, review: "Made my daughter's science homework an adventure." };
    await call("marketplace_rate", { token: visitor.token, path: { id: idOr(listingId) }, json, expect: [201] });
    // Rating again replaces the first rating: 200, not 201.
    await call("marketplace_rate", { token: visitor.token, path: { id: idOr(listingId) }, json: { rating: 4 }, expect: [200] });
  });

  op("marketplace_reviews", async () => {
    const answer = await call("marketplace_reviews", { path: { id: idOr(listingId) }, query: { sort: "recent", limit: 10 }, expect: [200] });
    if (target.stateful && listingId) expect((answer.json as { data: unknown[] }).data.length).toBeGreaterThan(0);
  });

  op("marketplace_use", async () => {
    await call("marketplace_use", { token: visitor.token, path: { id: idOr(listingId) }, expect: [200] });
  });
});
