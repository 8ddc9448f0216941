import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditLog, resolveReport, reviewQueue, revertTakedown, takeDown, upholdTakedown } from "../../server/areas/safety/index.ts";
import { expectApiError, expectOk } from "../support/assertions.ts";
import { createConversation, sendBlocking } from "../support/chat.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { fromChatPage, SHOP } from "../embeds/helpers.ts";
import { OPERATOR, publicPersona, publish, report, roomyUser, uniqueName } from "./helpers.ts";
import { readEvents } from "../rooms/event-reader.ts";

// Takedowns (issue 41, items 2 and 3): report -> review queue -> takedown -> every public place
// hides the target at once (explore, marketplace, feed, search, profiles, share pages, embeds,
// rooms, chat, the OpenAI-compatible door) while its owner keeps it and sees why -> one appeal ->
// revert, and everything is back. Every operator action is in the audit log.
let service: TestService;
let owner: TestUser;
let reader: TestUser;

beforeAll(async () => {
  service = await startTestService();
  owner = await roomyUser(service, await registerUser(service));
  reader = await registerUser(service);
});
afterAll(async () => {
  await service?.close();
});

const asReader = () => service.clientFor(reader);
const asOwner = () => service.clientFor(owner);

describe(`a persona taken down (${databaseKind})`, () => {
  const name = uniqueName("Tidewatch");
  let personaId: string;
  let handle: string;
  let listingId: string;
  let shareCode: string;
  let roomId: string;
  let conversationId: string;

  /** Where a public persona shows, each answering whether it shows this one now. */
  const surfaces: Record<string, () => Promise<boolean>> = {
    explore: async () => (await expectOk(asReader().GET("/v1/personas/explore", { params: { query: { q: name } } }))).data.some((p) => p.id === personaId),
    "explore (anonymous marketplace)": async () => (await expectOk(service.api.GET("/v1/marketplace", { params: { query: { q: name } } }))).data.some((l) => l.id === listingId),
    "marketplace listing": async () => (await service.api.GET("/v1/marketplace/{id}", { params: { path: { id: listingId } } })).response.status === 200,
    "persona read": async () => (await asReader().GET("/v1/personas/{id}", { params: { path: { id: personaId } } })).response.status === 200,
    feed: async () => (await expectOk(asReader().GET("/v1/social/feed", { params: { query: { limit: 100 } } }))).data.some((item) => item.persona.id === personaId),
    likes: async () => (await expectOk(asReader().GET("/v1/social/likes", { params: { query: { limit: 100 } } }))).data.some((item) => item.persona_id === personaId),
    "profile count": async () => (await expectOk(asReader().GET("/v1/social/profile/{user_id}", { params: { path: { user_id: owner.id } } }))).persona_count > 0,
    // The link leads to the persona's page (a link resolved just before may redirect a few seconds
    // longer from a process's cache: social/share-targets.ts), which is gone at once.
    "share link": async () => {
      const opened = await service.fetch(`/v1/shares/${shareCode}`, { redirect: "manual" });
      return opened.status === 302 && (await fetch(opened.headers.get("location")!)).status === 200;
    },
    "public page": async () => (await service.fetch(`/p/${personaId}`)).status === 200,
    "listing page": async () => (await service.fetch(`/marketplace/${listingId}`)).status === 200,
    embed: async () => (await service.api.POST("/v1/embed/{persona_id}/guests", { params: { path: { persona_id: personaId } }, headers: fromChatPage(service, SHOP) })).response.status === 201,
    room: async () => (await expectOk(asReader().GET("/v1/rooms/{id}", { params: { path: { id: roomId } } }))).personas.some((p) => p.persona_id === personaId),
    chat: async () => (await sendBlocking(service, reader, conversationId, "Still there?")).status === 201,
    "openai model": async () => (await service.fetch(`/openai/v1/models/${encodeURIComponent(`${owner.username}/${handle}`)}`, { headers: reader.auth })).status === 200,
  };

  async function shown(): Promise<Record<string, boolean>> {
    const seen: Record<string, boolean> = {};
    for (const [surface, check] of Object.entries(surfaces)) seen[surface] = await check();
    return seen;
  }
  const everywhere = (value: boolean) => Object.fromEntries(Object.keys(surfaces).map((surface) => [surface, value]));

  beforeAll(async () => {
    const persona = await publicPersona(service, owner, { name, description: `${name} watches the tides.` });
    personaId = persona.id;
    handle = persona.handle;
    listingId = await publish(service, owner, personaId);
    await expectOk(asReader().POST("/v1/social/follow/{user_id}", { params: { path: { user_id: owner.id } } }));
    await expectOk(asReader().POST("/v1/social/likes/{persona_id}", { params: { path: { persona_id: personaId } } }));
    const share = await expectOk(asOwner().POST("/v1/social/share/{persona_id}", { params: { path: { persona_id: personaId } }, body: { platform: "link" } }));
    shareCode = share.share_url.split("/").pop()!;
    await expectOk(asOwner().PUT("/v1/personas/{id}/embed", { params: { path: { id: personaId } }, body: { enabled: true, allowed_origins: [SHOP] } }));
    roomId = (await expectOk(asReader().POST("/v1/rooms", { body: { name: "Tide room", persona_ids: [personaId] } }), 201)).id;
    conversationId = (await createConversation(service, reader, personaId)).id;
  });

  it("shows everywhere before", async () => {
    expect(await shown()).toEqual(everywhere(true));
  });

  it("goes from every public place at once when an operator resolves its report with a takedown", async () => {
    const filed = await report(service, reader, "persona", personaId);
    const queued = await reviewQueue(service.services, { limit: 1000 });
    expect(queued.map((entry) => entry.target_id)).toContain(personaId);

    const { action, reports } = await resolveReport(service.services, filed.id, "takedown", OPERATOR);
    expect(action).toMatchObject({ kind: "takedown", target_type: "persona", target_id: personaId, owner_id: owner.id, reason: OPERATOR.reason, created_by: OPERATOR.operator });
    expect(reports.map((r) => r.id)).toEqual([filed.id]);
    expect(await shown()).toEqual(everywhere(false));
    expect((await reviewQueue(service.services, { limit: 1000 })).map((entry) => entry.target_id)).not.toContain(personaId);

    // The reporter sees the outcome.
    expect(await expectOk(asReader().GET("/v1/reports/{id}", { params: { path: { id: filed.id } } }))).toMatchObject({ status: "resolved", resolution: "taken_down" });
  });

  it("stays its owner's, who sees why", async () => {
    expect((await expectOk(asOwner().GET("/v1/personas/{id}", { params: { path: { id: personaId } } }))).id).toBe(personaId);
    expect((await expectOk(asOwner().GET("/v1/personas", { params: { query: { limit: 100 } } }))).data.map((p) => p.id)).toContain(personaId);
    const actions = await expectOk(asOwner().GET("/v1/moderation-actions"));
    const standing = actions.data.find((a) => a.target_id === personaId);
    expect(standing).toMatchObject({ kind: "takedown", reason: OPERATOR.reason, active: true, appealable: true });
    expect(standing?.appeal).toBeUndefined();
    // Nobody else sees the owner's actions.
    expect((await expectOk(asReader().GET("/v1/moderation-actions"))).data.map((a) => a.target_id)).not.toContain(personaId);
  });

  it("can be appealed once, by its owner only", async () => {
    const action = (await expectOk(asOwner().GET("/v1/moderation-actions"))).data.find((a) => a.target_id === personaId)!;
    await expectApiError(asReader().POST("/v1/moderation-actions/{id}/appeal", { params: { path: { id: action.id } }, body: { message: "Not mine, but..." } }), 404, "not_found");
    const appealed = await expectOk(asOwner().POST("/v1/moderation-actions/{id}/appeal", { params: { path: { id: action.id } }, body: { message: "I rewrote the greeting." } }));
    expect(appealed).toMatchObject({ appealable: false, appeal: { message: "I rewrote the greeting.", status: "pending" } });
    await expectApiError(asOwner().POST("/v1/moderation-actions/{id}/appeal", { params: { path: { id: action.id } }, body: { message: "Again!" } }), 409, "conflict");
  });

  it("comes back everywhere when an operator reverts it", async () => {
    const action = (await expectOk(asOwner().GET("/v1/moderation-actions"))).data.find((a) => a.target_id === personaId)!;
    const reverted = await revertTakedown(service.services, action.id, { operator: "second-operator", reason: "The appeal is right" });
    expect(reverted.reverted_at).not.toBeNull();
    expect(await shown()).toEqual(everywhere(true));
    const seen = (await expectOk(asOwner().GET("/v1/moderation-actions"))).data.find((a) => a.id === action.id);
    expect(seen).toMatchObject({ active: false, appealable: false, appeal: { status: "granted" } });
    await expect(revertTakedown(service.services, action.id, OPERATOR)).rejects.toMatchObject({ status: 409 });
  });

  it("records who did what, when and why in the audit log", async () => {
    const entries = await auditLog(service.services, { limit: 50, targetId: personaId });
    expect(entries.map((e) => [e.actor, e.action])).toEqual(
      expect.arrayContaining([
        [OPERATOR.operator, "takedown"],
        [OPERATOR.operator, "resolve:takedown"],
        ["owner", "appeal"],
        ["second-operator", "revert:takedown"],
      ]),
    );
    expect(entries.every((e) => e.at instanceof Date && e.reason)).toBe(true);
  });
});

describe(`other takedowns (${databaseKind})`, () => {
  it("takes a listing off the marketplace, leaving its persona in explore", async () => {
    const persona = await publicPersona(service, owner);
    const listingId = await publish(service, owner, persona.id);
    const filed = await report(service, reader, "listing", listingId);
    await resolveReport(service.services, filed.id, "takedown", OPERATOR);
    await expectApiError(service.api.GET("/v1/marketplace/{id}", { params: { path: { id: listingId } } }), 404, "not_found");
    expect((await expectOk(asReader().GET("/v1/personas/explore", { params: { query: { q: persona.name } } }))).data.map((p) => p.id)).toContain(persona.id);
  });

  it("hides a review from its listing's reviews, and an upheld appeal keeps it hidden", async () => {
    const persona = await publicPersona(service, owner);
    const listingId = await publish(service, owner, persona.id);
    const rating = await expectOk(asReader().POST("/v1/marketplace/{id}/rate", { params: { path: { id: listingId } }, body: { rating: 1, review: "Rubbish and so are you." } }), 201);
    const reviews = async () => (await expectOk(service.api.GET("/v1/marketplace/{id}/reviews", { params: { path: { id: listingId } } }))).data.map((r) => r.id);
    expect(await reviews()).toContain(rating.data.id);
    const filed = await report(service, owner, "review", rating.data.id);
    const { action } = await resolveReport(service.services, filed.id, "takedown", OPERATOR);
    expect(await reviews()).not.toContain(rating.data.id);
    await expectOk(asReader().POST("/v1/moderation-actions/{id}/appeal", { params: { path: { id: action!.id } }, body: { message: "It was a joke." } }));
    await upholdTakedown(service.services, action!.id, OPERATOR);
    const mine = (await expectOk(asReader().GET("/v1/moderation-actions"))).data.find((a) => a.id === action!.id);
    expect(mine).toMatchObject({ active: true, appeal: { status: "upheld" } });
    expect(await reviews()).not.toContain(rating.data.id);
  });

  it("hides a profile from profiles and user search", async () => {
    const loud = await registerUser(service);
    await expectOk(asReader().GET("/v1/social/profile/{user_id}", { params: { path: { user_id: loud.id } } }));
    const filed = await report(service, reader, "profile", loud.id);
    await resolveReport(service.services, filed.id, "takedown", OPERATOR);
    await expectApiError(asReader().GET("/v1/social/profile/{user_id}", { params: { path: { user_id: loud.id } } }), 404, "not_found");
    const hits = await expectOk(asReader().GET("/v1/social/search", { params: { query: { q: loud.username } } }));
    expect(hits.data.map((u) => u.id)).not.toContain(loud.id);
    // The account itself works.
    await expectOk(service.clientFor(loud).GET("/v1/auth/me"));
  });

  it("hides a room message from the room and its event stream, but not from its sender's history", async () => {
    const room = await expectOk(asOwner().POST("/v1/rooms", { body: { name: "Dock", is_public: true } }), 201);
    const said = await expectOk(asOwner().POST("/v1/rooms/{id}/messages", { params: { path: { id: room.id } }, body: { content: "Get lost, all of you." } }), 201);
    const messages = async (user: TestUser) => (await expectOk(service.clientFor(user).GET("/v1/rooms/{id}/messages", { params: { path: { id: room.id } } }))).data.map((m) => m.id);
    expect(await messages(reader)).toContain(said.id);
    await takeDown(service.services, { type: "room_message", id: said.id }, owner.id, OPERATOR);
    expect(await messages(reader)).not.toContain(said.id);
    expect(await messages(owner)).toContain(said.id);
    // Nor does the room's event stream replay it; it goes on past it.
    const after = await expectOk(asOwner().POST("/v1/rooms/{id}/messages", { params: { path: { id: room.id } }, body: { content: "Sorry." } }), 201);
    const replay = await readEvents(service.url, room.id, owner.auth, "0");
    try {
      const events = await replay.until((seen) => seen.some((event) => event.data.id === after.id), "the message after it");
      expect(events.filter((event) => event.event === "message").map((event) => event.data.id)).toEqual([after.id]);
    } finally {
      replay.close();
    }
  });

  it("dismissing a report leaves the target where it is; resolving twice is 409", async () => {
    const persona = await publicPersona(service, owner);
    const filed = await report(service, reader, "persona", persona.id);
    await resolveReport(service.services, filed.id, "dismiss", OPERATOR);
    expect((await asReader().GET("/v1/personas/{id}", { params: { path: { id: persona.id } } })).response.status).toBe(200);
    expect(await expectOk(asReader().GET("/v1/reports/{id}", { params: { path: { id: filed.id } } }))).toMatchObject({ status: "resolved", resolution: "dismissed" });
    await expect(resolveReport(service.services, filed.id, "takedown", OPERATOR)).rejects.toMatchObject({ status: 409 });
    // Resolved, the reporter may report it again.
    await report(service, reader, "persona", persona.id);
  });

  it("warns the owner: an action they see, which cannot be appealed", async () => {
    const persona = await publicPersona(service, owner);
    const filed = await report(service, reader, "persona", persona.id);
    const { action } = await resolveReport(service.services, filed.id, "warn", OPERATOR);
    const seen = (await expectOk(asOwner().GET("/v1/moderation-actions"))).data.find((a) => a.id === action!.id);
    expect(seen).toMatchObject({ kind: "warning", appealable: false, active: true });
    await expectApiError(asOwner().POST("/v1/moderation-actions/{id}/appeal", { params: { path: { id: action!.id } }, body: { message: "Why?" } }), 409, "conflict");
    expect((await asReader().GET("/v1/personas/{id}", { params: { path: { id: persona.id } } })).response.status).toBe(200);
  });
});
