import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reportDetail, reviewQueue } from "../../server/areas/safety/index.ts";
import { expectApiError, expectOk } from "../support/assertions.ts";
import { createConversation, sendBlocking } from "../support/chat.ts";
import { sendRaw } from "../support/raw.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { publicPersona, publish, report, roomyUser } from "./helpers.ts";

// Reports (issue 41, item 1): any signed-in user reports what they can see; one open report per
// reporter and target; rate-limited; the reporter sees the state of their own reports and nobody
// else's; the snapshot keeps what was reported whatever the owner does afterwards.
let service: TestService;
let owner: TestUser;
let reporter: TestUser;
let other: TestUser;

beforeAll(async () => {
  service = await startTestService();
  owner = await roomyUser(service, await registerUser(service));
  reporter = await registerUser(service);
  other = await registerUser(service);
});
afterAll(async () => {
  await service?.close();
});

describe(`reports (${databaseKind})`, () => {
  it("files a report of a public persona with a snapshot that a later edit cannot change", async () => {
    const persona = await publicPersona(service, owner, { description: "Rude on purpose." });
    const filed = await report(service, reporter, "persona", persona.id);
    expect(filed).toMatchObject({ target_type: "persona", target_id: persona.id, reason: "harassment", details: "Insults everyone.", status: "open", resolution: null, resolved_at: null });
    await expectOk(service.clientFor(owner).PUT("/v1/personas/{id}", { params: { path: { id: persona.id } }, body: { description: "Very polite now." } }));
    const detail = await reportDetail(service.services, filed.id);
    expect(detail.report.snapshot).toMatchObject({ name: persona.name, description: "Rude on purpose." });
    expect(detail.current).toMatchObject({ description: "Very polite now." });
    const queued = await reviewQueue(service.services, { targetType: "persona", limit: 1000 });
    expect(queued.find((entry) => entry.target_id === persona.id)).toMatchObject({ reports: 1, reasons: ["harassment"], report_id: filed.id });
  });

  it("reports a listing, a review, a profile, a room message and a persona's reply in the reporter's own conversation", async () => {
    const persona = await publicPersona(service, owner);
    const listingId = await publish(service, owner, persona.id);
    expect((await report(service, reporter, "listing", listingId)).target_type).toBe("listing");

    const rating = await expectOk(service.clientFor(other).POST("/v1/marketplace/{id}/rate", { params: { path: { id: listingId } }, body: { rating: 1, review: "Awful persona." } }), 201);
    expect((await report(service, reporter, "review", rating.data.id)).target_type).toBe("review");

    expect((await report(service, reporter, "profile", owner.id)).target_type).toBe("profile");

    const room = await expectOk(service.clientFor(owner).POST("/v1/rooms", { body: { name: "Harbour", is_public: true } }), 201);
    const said = await expectOk(service.clientFor(owner).POST("/v1/rooms/{id}/messages", { params: { path: { id: room.id } }, body: { content: "Nobody asked you." } }), 201);
    expect((await report(service, reporter, "room_message", said.id)).target_type).toBe("room_message");

    const conversation = await createConversation(service, reporter, persona.id);
    expect((await sendBlocking(service, reporter, conversation.id, "Hello")).status).toBe(201);
    const reply = await service.services.db.knex("messages").where({ conversation_id: conversation.id, role: "assistant" }).orderBy("created_at", "desc").first("id");
    const filed = await report(service, reporter, "conversation_message", (reply as { id: string }).id);
    // A reply is the persona's doing: the operator's takedown acts on the persona.
    expect((await reportDetail(service.services, filed.id)).target).toEqual({ type: "persona", id: persona.id });
  });

  it("allows one open report per reporter and target (409), but others may report it too", async () => {
    const persona = await publicPersona(service, owner);
    await report(service, reporter, "persona", persona.id);
    await expectApiError(service.clientFor(reporter).POST("/v1/reports", { body: { target_type: "persona", target_id: persona.id, reason: "spam" } }), 409, "conflict");
    await report(service, other, "persona", persona.id);
    const queued = await reviewQueue(service.services, { targetType: "persona", limit: 1000 });
    expect(queued.find((entry) => entry.target_id === persona.id)?.reports).toBe(2);
  });

  it("refuses what the reporter cannot see (404) and their own content (400)", async () => {
    const hidden = await expectOk(service.clientFor(owner).POST("/v1/personas", { body: { name: "Private", instructions: "Secret." } }), 201);
    await expectApiError(service.clientFor(reporter).POST("/v1/reports", { body: { target_type: "persona", target_id: hidden.id, reason: "spam" } }), 404, "not_found");
    await expectApiError(service.clientFor(reporter).POST("/v1/reports", { body: { target_type: "listing", target_id: hidden.id, reason: "spam" } }), 404, "not_found");
    const privateRoom = await expectOk(service.clientFor(owner).POST("/v1/rooms", { body: { name: "Members only" } }), 201);
    const said = await expectOk(service.clientFor(owner).POST("/v1/rooms/{id}/messages", { params: { path: { id: privateRoom.id } }, body: { content: "Just us." } }), 201);
    await expectApiError(service.clientFor(reporter).POST("/v1/reports", { body: { target_type: "room_message", target_id: said.id, reason: "spam" } }), 404, "not_found");
    // Someone else's conversation message is not the reporter's to see.
    const mine = await publicPersona(service, reporter);
    await expectApiError(service.clientFor(reporter).POST("/v1/reports", { body: { target_type: "persona", target_id: mine.id, reason: "spam" } }), 400, "invalid_request");
    await expectApiError(service.clientFor(reporter).POST("/v1/reports", { body: { target_type: "profile", target_id: reporter.id, reason: "spam" } }), 400, "invalid_request");
  });

  it("refuses malformed reports (400)", async () => {
    const persona = await publicPersona(service, owner);
    const refuse = async (body: unknown) => expect((await sendRaw(service, "POST", "/v1/reports", { body, headers: reporter.auth })).status).toBe(400);
    await refuse({ target_type: "galaxy", target_id: persona.id, reason: "spam" });
    await refuse({ target_type: "persona", target_id: "not-a-uuid", reason: "spam" });
    await refuse({ target_type: "persona", target_id: persona.id, reason: "boring" });
    await refuse({ target_type: "persona", target_id: persona.id, reason: "spam", details: "x".repeat(2001) });
    await refuse({ target_type: "persona", target_id: persona.id });
  });

  it("needs a credential (401)", async () => {
    const persona = await publicPersona(service, owner);
    await expectApiError(service.api.POST("/v1/reports", { body: { target_type: "persona", target_id: persona.id, reason: "spam" } }), 401, "unauthorized");
    await expectApiError(service.api.GET("/v1/reports"), 401, "unauthorized");
  });

  it("shows the reporter their own reports only: another user's report is 404 and absent from their list", async () => {
    const persona = await publicPersona(service, owner);
    const filed = await report(service, reporter, "persona", persona.id);
    expect(await expectOk(service.clientFor(reporter).GET("/v1/reports/{id}", { params: { path: { id: filed.id } } }))).toEqual(filed);
    await expectApiError(service.clientFor(other).GET("/v1/reports/{id}", { params: { path: { id: filed.id } } }), 404, "not_found");
    await expectApiError(service.clientFor(owner).GET("/v1/reports/{id}", { params: { path: { id: filed.id } } }), 404, "not_found");
    const theirs = await expectOk(service.clientFor(other).GET("/v1/reports", { params: { query: { limit: 100 } } }));
    expect(theirs.data.map((r) => r.id)).not.toContain(filed.id);
    const mine = await expectOk(service.clientFor(reporter).GET("/v1/reports", { params: { query: { status: "open", limit: 100 } } }));
    expect(mine.data.map((r) => r.id)).toContain(filed.id);
    expect(mine.data.every((r) => r.status === "open")).toBe(true);
  });
});

describe(`the report rate limit (${databaseKind})`, () => {
  let limited: TestService;
  beforeAll(async () => {
    limited = await startTestService({ env: { REPORTS_PER_HOUR: "2" } });
  });
  afterAll(async () => {
    await limited?.close();
  });

  it("answers 429 with Retry-After past REPORTS_PER_HOUR reports an hour", async () => {
    const maker = await registerUser(limited);
    const busy = await registerUser(limited);
    const targets = await Promise.all([1, 2, 3].map(() => publicPersona(limited, maker)));
    await report(limited, busy, "persona", targets[0]!.id);
    await report(limited, busy, "persona", targets[1]!.id);
    const refused = await limited.clientFor(busy).POST("/v1/reports", { body: { target_type: "persona", target_id: targets[2]!.id, reason: "spam" } });
    expect(refused.response.status).toBe(429);
    expect(refused.error?.error.code).toBe("rate_limited");
    expect(Number(refused.response.headers.get("retry-after"))).toBeGreaterThan(0);
    // Another reporter is not limited by the first one's reports.
    await report(limited, await registerUser(limited), "persona", targets[2]!.id);
  });
});
