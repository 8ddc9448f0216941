import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveReport, reviewQueue } from "../../server/areas/safety/index.ts";
import { expectApiError, expectOk } from "../support/assertions.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { eventually } from "../support/wait.ts";
import { OPERATOR, publicPersona, publish, roomyUser, uniqueName } from "./helpers.ts";

// The offline moderation provider (issue 41, item 5): with MODERATION_PROVIDER=wordlist, new public
// personas, reviews, room messages and display names are checked against the shipped list and the
// operator's own; MODERATION_ACTION decides whether a flagged persona or review is held for review
// (saved hidden, in the queue) or refused. Room messages and display names are refused either way.
const dir = mkdtempSync(join(tmpdir(), "persona-wordlist-"));
const wordList = join(dir, "words.txt");
writeFileSync(wordList, "# the operator's own words\ngloomberry\nbad harbour\n");
const FLAGGED = "Sells gloomberry to children.";

describe(`the word-list provider holding flagged content (${databaseKind})`, () => {
  let service: TestService;
  let author: TestUser;
  let reader: TestUser;
  beforeAll(async () => {
    service = await startTestService({ env: { MODERATION_PROVIDER: "wordlist", MODERATION_WORDLIST: wordList, MODERATION_ACTION: "hold" } });
    author = await roomyUser(service, await registerUser(service));
    reader = await registerUser(service);
  });
  afterAll(async () => {
    await service?.close();
  });

  const visibleToReader = async (id: string) => (await service.clientFor(reader).GET("/v1/personas/{id}", { params: { path: { id } } })).response.status === 200;
  const holdOf = async (user: TestUser, targetId: string) =>
    eventually(async () => (await expectOk(service.clientFor(user).GET("/v1/moderation-actions"))).data.find((a) => a.target_id === targetId && a.kind === "hold"));

  it("saves a flagged public persona hidden, puts it in the review queue, and tells its owner why", async () => {
    const persona = await publicPersona(service, author, { description: FLAGGED });
    expect(await visibleToReader(persona.id)).toBe(false);
    expect((await expectOk(service.clientFor(author).GET("/v1/personas/{id}", { params: { path: { id: persona.id } } }))).description).toBe(FLAGGED);
    const hold = await holdOf(author, persona.id);
    expect(hold).toMatchObject({ reason: expect.stringContaining("wordlist"), active: true, appealable: true });
    const queued = (await reviewQueue(service.services, { targetType: "persona", limit: 1000 })).find((entry) => entry.target_id === persona.id);
    expect(queued).toMatchObject({ reports: 1, reasons: ["other"] });
    // Dismissing the provider's report releases the persona.
    await resolveReport(service.services, queued!.report_id, "dismiss", OPERATOR);
    expect(await visibleToReader(persona.id)).toBe(true);
  });

  it("flags words of the shipped list too, in any case and across punctuation", async () => {
    const persona = await publicPersona(service, author, { greeting_message: "Kill-yourself, traveller." });
    expect(await visibleToReader(persona.id)).toBe(false);
    expect((await holdOf(author, persona.id))?.reason).toContain("self-harm");
  });

  it("checks a private persona when it is made public, and a public one when its text changes", async () => {
    const quiet = await expectOk(service.clientFor(author).POST("/v1/personas", { body: { name: uniqueName("Quiet"), instructions: "Talk about the bad harbour." } }), 201);
    await expectOk(service.clientFor(author).PUT("/v1/personas/{id}", { params: { path: { id: quiet.id } }, body: { is_public: true } }));
    expect(await visibleToReader(quiet.id)).toBe(false);
    await holdOf(author, quiet.id);

    const clean = await publicPersona(service, author);
    expect(await visibleToReader(clean.id)).toBe(true);
    await expectOk(service.clientFor(author).PUT("/v1/personas/{id}", { params: { path: { id: clean.id } }, body: { description: FLAGGED } }));
    expect(await visibleToReader(clean.id)).toBe(false);
  });

  it("lets a clean persona through", async () => {
    const persona = await publicPersona(service, author, { description: "Tells stories of the berry harvest." });
    expect(await visibleToReader(persona.id)).toBe(true);
  });

  it("holds a flagged review: saved, but not among the listing's reviews; a takedown confirms the hold", async () => {
    const persona = await publicPersona(service, author);
    const listingId = await publish(service, author, persona.id);
    const rating = await expectOk(service.clientFor(reader).POST("/v1/marketplace/{id}/rate", { params: { path: { id: listingId } }, body: { rating: 2, review: FLAGGED } }), 201);
    const reviews = await expectOk(service.api.GET("/v1/marketplace/{id}/reviews", { params: { path: { id: listingId } } }));
    expect(reviews.data.map((r) => r.id)).not.toContain(rating.data.id);
    const hold = await holdOf(reader, rating.data.id);
    const queued = (await reviewQueue(service.services, { targetType: "review", limit: 1000 })).find((entry) => entry.target_id === rating.data.id)!;
    const { action } = await resolveReport(service.services, queued.report_id, "takedown", OPERATOR);
    expect(action).toMatchObject({ id: hold!.id, kind: "takedown", reason: OPERATOR.reason });
  });

  it("refuses a flagged room message or display name even when holding (400 content_flagged)", async () => {
    const room = await expectOk(service.clientFor(author).POST("/v1/rooms", { body: { name: "Quay" } }), 201);
    const refused = await expectApiError(service.clientFor(author).POST("/v1/rooms/{id}/messages", { params: { path: { id: room.id } }, body: { content: FLAGGED } }), 400, "content_flagged");
    expect(refused.error.details).toMatchObject({ provider: "wordlist", categories: ["flagged-term"] });
    expect((await expectOk(service.clientFor(author).GET("/v1/rooms/{id}/messages", { params: { path: { id: room.id } } }))).total).toBe(0);
    await expectApiError(service.clientFor(author).PUT("/v1/auth/me", { body: { display_name: "Gloomberry King" } }), 400, "content_flagged");
    expect((await expectOk(service.clientFor(author).PUT("/v1/auth/me", { body: { display_name: "Harbour King" } }))).display_name).toBe("Harbour King");
  });
});

describe(`the word-list provider refusing flagged content (${databaseKind})`, () => {
  let service: TestService;
  let author: TestUser;
  beforeAll(async () => {
    service = await startTestService({ env: { MODERATION_PROVIDER: "wordlist", MODERATION_WORDLIST: wordList, MODERATION_ACTION: "refuse" } });
    author = await roomyUser(service, await registerUser(service));
  });
  afterAll(async () => {
    await service?.close();
  });

  it("refuses a flagged public persona or review with 400 content_flagged, storing nothing", async () => {
    const before = (await expectOk(service.clientFor(author).GET("/v1/personas"))).total;
    const refused = await expectApiError(
      service.clientFor(author).POST("/v1/personas", { body: { name: "Dealer", instructions: "Be friendly.", description: FLAGGED, is_public: true } }),
      400,
      "content_flagged",
    );
    expect(refused.error.message).toContain("The persona was flagged");
    expect((await expectOk(service.clientFor(author).GET("/v1/personas"))).total).toBe(before);
    // A private persona is nobody else's to read: it is not checked until it is made public.
    const quiet = await expectOk(service.clientFor(author).POST("/v1/personas", { body: { name: "Dealer", instructions: "Be friendly.", description: FLAGGED } }), 201);
    await expectApiError(service.clientFor(author).PUT("/v1/personas/{id}", { params: { path: { id: quiet.id } }, body: { is_public: true } }), 400, "content_flagged");
    expect((await expectOk(service.clientFor(author).GET("/v1/personas/{id}", { params: { path: { id: quiet.id } } }))).is_public).toBe(false);

    const persona = await publicPersona(service, author);
    const listingId = await publish(service, author, persona.id);
    const rater = await registerUser(service);
    await expectApiError(service.clientFor(rater).POST("/v1/marketplace/{id}/rate", { params: { path: { id: listingId } }, body: { rating: 1, review: FLAGGED } }), 400, "content_flagged");
    await expectOk(service.clientFor(rater).POST("/v1/marketplace/{id}/rate", { params: { path: { id: listingId } }, body: { rating: 4, review: "Lovely." } }), 201);
  });
});
