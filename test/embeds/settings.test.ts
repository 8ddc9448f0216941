import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectApiError, expectOk } from "../support/assertions.ts";
import { createPersona } from "../support/chat.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { embeddedPersona, fromChatPage, newVisitor, SHOP } from "./helpers.ts";

// An owner's embed settings (issue 36 item 3): disabled by default, exact origins, a daily cap,
// read back with the snippet; another user's persona is 404; only a public persona can be enabled,
// and one made private stops being embeddable.

let service: TestService;
let owner: TestUser;
let stranger: TestUser;

beforeAll(async () => {
  service = await startTestService({ env: { DEFAULT_PLAN: "creator" } });
  [owner, stranger] = [await registerUser(service), await registerUser(service)];
});

afterAll(async () => {
  await service?.close();
});

const settingsOf = (user: TestUser, id: string) => service.clientFor(user).GET("/v1/personas/{id}/embed", { params: { path: { id } } });
const update = (user: TestUser, id: string, body: { enabled?: boolean; allowed_origins?: string[]; daily_message_cap?: number }) =>
  service.clientFor(user).PUT("/v1/personas/{id}/embed", { params: { path: { id } }, body });

describe("embed settings", () => {
  it("are off by default, with no origin and the default daily cap, and say how to embed", async () => {
    const persona = await createPersona(service, owner, { is_public: true });
    const settings = await expectOk(settingsOf(owner, persona.id));
    expect(settings).toMatchObject({ persona_id: persona.id, enabled: false, allowed_origins: [], daily_message_cap: 200, messages_today: 0, live: false, updated_at: null });
    expect(settings.snippet).toBe(`<script src="${service.url}/embed.js" data-persona="${persona.id}" async></script>`);
    expect(settings.iframe_url).toBe(`${service.url}/embed/${persona.id}`);
    // Nothing can be embedded until the owner says so: the chat page and the guest operations are 404.
    expect((await service.fetch(`/embed/${persona.id}`)).status).toBe(404);
    await expectApiError(service.api.POST("/v1/embed/{persona_id}/guests", { params: { path: { persona_id: persona.id } }, headers: fromChatPage(service, SHOP) }), 404, "not_found");
  });

  it("are changed field by field and read back; origins are exact and deduplicated", async () => {
    const persona = await createPersona(service, owner, { is_public: true });
    const changed = await expectOk(update(owner, persona.id, { enabled: true, allowed_origins: [SHOP, "http://localhost:5173", SHOP] }));
    expect(changed).toMatchObject({ enabled: true, allowed_origins: [SHOP, "http://localhost:5173"], daily_message_cap: 200, live: true });
    expect(typeof changed.updated_at).toBe("string");
    const capped = await expectOk(update(owner, persona.id, { daily_message_cap: 5 }));
    expect(capped).toMatchObject({ enabled: true, allowed_origins: [SHOP, "http://localhost:5173"], daily_message_cap: 5 });
    expect(await expectOk(settingsOf(owner, persona.id))).toEqual(capped);
    // No origin left: enabled, but nothing can embed it.
    const none = await expectOk(update(owner, persona.id, { allowed_origins: [] }));
    expect(none).toMatchObject({ enabled: true, live: false });
    const off = await expectOk(update(owner, persona.id, { enabled: false, allowed_origins: [SHOP] }));
    expect(off).toMatchObject({ enabled: false, live: false });
  });

  it("refuse an origin not written as a browser sends it, and more than 20", async () => {
    const persona = await createPersona(service, owner, { is_public: true });
    for (const origin of ["https://shop.example/", "https://shop.example/page", "HTTPS://SHOP.EXAMPLE", "https://shop.example:443", "ftp://shop.example", "*"]) {
      const error = await expectApiError(update(owner, persona.id, { allowed_origins: [origin] }), 400, "invalid_request");
      expect(JSON.stringify(error), origin).toContain("/body/allowed_origins");
    }
    const many = Array.from({ length: 21 }, (_, i) => `https://site${i}.example`);
    await expectApiError(update(owner, persona.id, { allowed_origins: many }), 400, "invalid_request");
    await expectApiError(update(owner, persona.id, { daily_message_cap: 0 }), 400, "invalid_request");
    expect((await expectOk(settingsOf(owner, persona.id))).allowed_origins).toEqual([]);
  });

  it("are the owner's: another user's persona, public or private, is 404 to read, change and list", async () => {
    const open = await embeddedPersona(service, owner);
    const hidden = await createPersona(service, owner, { is_public: false });
    for (const persona of [open, hidden]) {
      await expectApiError(settingsOf(stranger, persona.id), 404, "not_found");
      await expectApiError(update(stranger, persona.id, { enabled: false, allowed_origins: ["https://evil.example"] }), 404, "not_found");
      await expectApiError(service.clientFor(stranger).GET("/v1/personas/{id}/embed/conversations", { params: { path: { id: persona.id } } }), 404, "not_found");
    }
    await expectApiError(settingsOf(owner, "0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6aff"), 404, "not_found");
    // Unchanged by the stranger's attempt.
    expect(await expectOk(settingsOf(owner, open.id))).toMatchObject({ enabled: true, allowed_origins: [SHOP] });
  });

  it("can enable only a public persona; made private, it stops at once; public again, it resumes", async () => {
    const hidden = await createPersona(service, owner, { is_public: false });
    await expectApiError(update(owner, hidden.id, { enabled: true, allowed_origins: [SHOP] }), 409, "conflict");
    // Origins can be prepared before it is public.
    expect(await expectOk(update(owner, hidden.id, { allowed_origins: [SHOP] }))).toMatchObject({ enabled: false, live: false });

    const persona = await embeddedPersona(service, owner);
    const token = await newVisitor(service, persona.id);
    expect((await service.fetch(`/embed/${persona.id}`)).status).toBe(200);
    await expectOk(service.clientFor(owner).PUT("/v1/personas/{id}", { params: { path: { id: persona.id } }, body: { is_public: false } }));
    expect(await expectOk(settingsOf(owner, persona.id))).toMatchObject({ enabled: true, live: false });
    expect((await service.fetch(`/embed/${persona.id}`)).status).toBe(404);
    await expectApiError(service.api.GET("/v1/embed/{persona_id}/conversation", { params: { path: { persona_id: persona.id } }, headers: fromChatPage(service, SHOP, token) }), 404, "not_found");
    await expectOk(service.clientFor(owner).PUT("/v1/personas/{id}", { params: { path: { id: persona.id } }, body: { is_public: true } }));
    expect(await expectOk(settingsOf(owner, persona.id))).toMatchObject({ live: true });
    await expectOk(service.api.GET("/v1/embed/{persona_id}/conversation", { params: { path: { persona_id: persona.id } }, headers: fromChatPage(service, SHOP, token) }));
  });
});
