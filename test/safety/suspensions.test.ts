import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveReport, suspendUser, unsuspendUser } from "../../server/areas/safety/index.ts";
import { expectApiError, expectOk } from "../support/assertions.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";
import { OPERATOR, publicPersona, publish, report, uniqueName } from "./helpers.ts";
import { addMember, makeRoom } from "../rooms/helpers.ts";
import { readEvents } from "../rooms/event-reader.ts";

// Suspensions (issue 41, item 3): a suspended account cannot sign in, refresh or use its keys
// (403 `account_suspended`, saying why and how to export), its public content is hidden by the rule
// that hides a deleted account's, it keeps the right to export its data, and it is reversible.
let service: TestService;
let suspended: TestUser;
let reader: TestUser;
let key: string;
let personaId: string;
let listingId: string;
let roomId: string;
const name = uniqueName("Driftwood");

beforeAll(async () => {
  service = await startTestService();
  suspended = await registerUser(service);
  reader = await registerUser(service);
  key = await apiKeyFor(service, suspended, ["personas:read"]);
  personaId = (await publicPersona(service, suspended, { name })).id;
  listingId = await publish(service, suspended, personaId);
  // A room of the reader's where the account to be suspended has spoken.
  roomId = (await makeRoom(service, reader, { name: "Harbour talk" })).id;
  await addMember(service, reader, roomId, suspended);
  await expectOk(service.clientFor(suspended).POST("/v1/rooms/{id}/messages", { params: { path: { id: roomId } }, body: { content: "Ahoy from the driftwood" } }), 201);
});
afterAll(async () => {
  await service?.close();
});

const login = (user: TestUser) => service.api.POST("/v1/auth/login", { body: { email: user.email, password: user.password } });
const roomSays = async () => (await expectOk(service.clientFor(reader).GET("/v1/rooms/{id}/messages", { params: { path: { id: roomId } } }))).data.map((m) => m.content);
const explored = async () => (await expectOk(service.clientFor(reader).GET("/v1/personas/explore", { params: { query: { q: name } } }))).data.map((p) => p.id);

describe(`a suspended account (${databaseKind})`, () => {
  it("works before", async () => {
    await expectOk(login(suspended));
    expect(await explored()).toContain(personaId);
    expect(await roomSays()).toEqual(["Ahoy from the driftwood"]);
  });

  it("is suspended through a report's resolution", async () => {
    const filed = await report(service, reader, "persona", personaId);
    const { action } = await resolveReport(service.services, filed.id, "suspend", { operator: OPERATOR.operator, reason: "Repeated harassment" });
    expect(action).toMatchObject({ kind: "suspension", target_type: "account", target_id: suspended.id, owner_id: suspended.id });
    await expect(suspendUser(service.services, suspended.username, OPERATOR)).rejects.toMatchObject({ status: 409 });
  });

  it("cannot sign in or use its session or keys (403 account_suspended, with the reason and the export), nor refresh (401)", async () => {
    const refused = await expectApiError(login(suspended), 403, "account_suspended");
    expect(refused.error.message).toContain("Repeated harassment");
    expect(refused.error.details).toMatchObject({ reason: "Repeated harassment", export: "POST /v1/auth/suspended/export-data" });
    // A wrong password learns nothing of the suspension.
    await expectApiError(service.api.POST("/v1/auth/login", { body: { email: suspended.email, password: "Wrong-password-1" } }), 401, "unauthorized");
    await expectApiError(service.clientFor(suspended).GET("/v1/personas"), 403, "account_suspended");
    await expectApiError(service.clientFor({ auth: { "x-api-key": key } }).GET("/v1/personas"), 403, "account_suspended");
    // A refresh declares no 403: it is 401, saying why.
    const refresh = await expectApiError(service.api.POST("/v1/auth/refresh", { body: { refresh_token: suspended.refreshToken } }), 401, "unauthorized");
    expect(refresh.error.message).toContain("suspended");
  });

  it("has its public content hidden: explore, the marketplace, its profile, its room messages", async () => {
    expect(await roomSays()).toEqual([]);
    // The room's event stream replays no message of the account either, and goes on past it.
    await expectOk(service.clientFor(reader).POST("/v1/rooms/{id}/messages", { params: { path: { id: roomId } }, body: { content: "Still here" } }), 201);
    const replay = await readEvents(service.url, roomId, reader.auth, "0");
    try {
      const events = await replay.until((seen) => seen.some((event) => event.data.content === "Still here"), "the reader's own message");
      expect(events.filter((event) => event.event === "message").map((event) => event.data.content)).toEqual(["Still here"]);
    } finally {
      replay.close();
    }
    expect(await explored()).not.toContain(personaId);
    await expectApiError(service.clientFor(reader).GET("/v1/personas/{id}", { params: { path: { id: personaId } } }), 404, "not_found");
    await expectApiError(service.api.GET("/v1/marketplace/{id}", { params: { path: { id: listingId } } }), 404, "not_found");
    await expectApiError(service.clientFor(reader).GET("/v1/social/profile/{user_id}", { params: { path: { user_id: suspended.id } } }), 404, "not_found");
    expect((await service.fetch(`/p/${personaId}`)).status).toBe(404);
  });

  it("keeps the right to export its data, proven by its e-mail and password", async () => {
    const started = await expectOk(service.api.POST("/v1/auth/suspended/export-data", { body: { email: suspended.email, password: suspended.password } }));
    expect(started).toMatchObject({ status: "processing" });
    await expectApiError(service.api.POST("/v1/auth/suspended/export-data", { body: { email: suspended.email, password: "Wrong-password-1" } }), 401, "unauthorized");
    // An account in good standing signs in and exports the usual way.
    await expectApiError(service.api.POST("/v1/auth/suspended/export-data", { body: { email: reader.email, password: reader.password } }), 409, "conflict");
  });

  it("is reversible: unsuspended, it signs in and its content is back", async () => {
    await unsuspendUser(service.services, suspended.email, { operator: OPERATOR.operator, reason: "Served its time" });
    const session = await expectOk(login(suspended));
    expect(session.user.id).toBe(suspended.id);
    await expectOk(service.clientFor({ auth: { "x-api-key": key } }).GET("/v1/personas"));
    expect(await explored()).toContain(personaId);
    await expectOk(service.api.GET("/v1/marketplace/{id}", { params: { path: { id: listingId } } }));
    expect(await roomSays()).toEqual(["Still here", "Ahoy from the driftwood"]);
    const actions = await expectOk(service.clientFor({ auth: { authorization: `Bearer ${session.access_token}` } }).GET("/v1/moderation-actions"));
    expect(actions.data.find((a) => a.kind === "suspension")).toMatchObject({ target_id: suspended.id, active: false, appealable: false });
    await expect(unsuspendUser(service.services, suspended.username, OPERATOR)).rejects.toMatchObject({ status: 409 });
  });

  it("names no account that does not exist (404)", async () => {
    await expect(suspendUser(service.services, "nobody-at-all@example.com", OPERATOR)).rejects.toMatchObject({ status: 404 });
  });
});
