import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.ts";
import { startSmtpCatcher, type SmtpCatcher } from "../support/smtp-catcher.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { until } from "../support/wait.ts";
import { tags } from "./unfurl.ts";

// Every link the service sends a person, followed: the verification and reset e-mails' links (read
// from the mails an SMTP server received), the share link's target and the URL publishing answers.
// Without APP_BASE_URL they lead to the service's own pages, which work; with it, to the app's
// origin at the documented paths, whose tokens work with the API as a front end would use them.
let smtp: SmtpCatcher;
const APP = "https://app.example.test";

beforeAll(async () => {
  smtp = await startSmtpCatcher();
});

afterAll(() => smtp?.close());

/** The text part of a raw message, quoted-printable undone. */
const bodyOf = (raw: string) =>
  raw
    .slice(raw.indexOf("\r\n\r\n") + 4)
    .replace(/=\r\n/g, "")
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));

/** The link of the latest mail to `to` that holds one to `path`. */
async function mailedLink(to: string, path: "/verify-email" | "/reset-password"): Promise<URL> {
  const mail = await until(`the mail to ${to} with its ${path} link`, () => smtp.received.findLast((m) => m.to.includes(to) && bodyOf(m.raw).includes(`${path}?token=`)), 15_000);
  return new URL(new RegExp(`(https?://\\S+${path}\\?token=\\S+)`).exec(bodyOf(mail.raw))![1]!);
}

const FORM = { "content-type": "application/x-www-form-urlencoded" };

/** The hidden fields of the page's form, by name. */
function hiddenFields(html: string): Record<string, string> {
  return Object.fromEntries(tags(html, "input").filter((input) => input.type === "hidden").map((input) => [input.name!, input.value!]));
}

describe("without APP_BASE_URL: the links lead to the service's own pages", () => {
  let service: TestService;
  let clock: Date | undefined;

  beforeAll(async () => {
    service = await startTestService({ env: { SMTP_URL: smtp.url }, now: () => clock ?? new Date() });
  });

  afterAll(() => service?.close());

  const post = (path: string, fields: Record<string, string>) => service.fetch(path, { method: "POST", headers: FORM, body: new URLSearchParams(fields) });
  const verified = async (user: TestUser) => (await service.clientFor(user).GET("/v1/auth/me")).data!.email_verified;

  it("verification: opening the link changes nothing; the Confirm form does, once, and only with its anti-forgery token", async () => {
    const user = await registerUser(service);
    const link = await mailedLink(user.email, "/verify-email");
    expect(`${link.origin}${link.pathname}`).toBe(`${service.url}/verify-email`);
    expect(link.searchParams.get("token")).toMatch(/^vt_/);

    // A mail scanner's prefetch and the person's click: the same page, nothing spent.
    for (let i = 0; i < 2; i++) {
      const opened = await fetch(link);
      expect(opened.status).toBe(200);
      expect(opened.headers.get("cache-control")).toBe("no-store");
      expect(opened.headers.get("referrer-policy")).toBe("no-referrer");
      const html = await opened.text();
      expect(html).toContain("Confirm my address");
    }
    expect(await verified(user)).toBe(false);
    const fields = hiddenFields(await (await fetch(link)).text());
    expect(fields.token).toBe(link.searchParams.get("token"));
    expect(fields.csrf_token).toMatch(/^\d+\.[A-Za-z0-9_-]{43}$/);

    // A forged post: without the anti-forgery token, with a made-up one, with one of another link.
    const other = await registerUser(service);
    const otherFields = hiddenFields(await (await fetch(await mailedLink(other.email, "/verify-email"))).text());
    const forgeries: Record<string, string>[] = [{ token: fields.token! }, { token: fields.token!, csrf_token: "1.abc" }, { token: fields.token!, csrf_token: otherFields.csrf_token! }];
    for (const forged of forgeries) {
      const refused = await post("/verify-email", forged);
      expect(refused.status).toBe(403);
      expect(await refused.text()).toContain("nothing was confirmed");
    }
    expect(await verified(user)).toBe(false);

    const confirmed = await post("/verify-email", fields);
    expect(confirmed.status).toBe(200);
    expect(await confirmed.text()).toContain("your e-mail address is confirmed");
    expect(await verified(user)).toBe(true);
    // The other account is untouched.
    expect(await verified(other)).toBe(false);

    // Used: the link and a second press both say so, 410.
    const again = await fetch(link);
    expect(again.status).toBe(410);
    expect(await again.text()).toContain("This link was already used");
    expect((await post("/verify-email", fields)).status).toBe(410);
  });

  it("reset: the form states the rule, shows mismatches and weak passwords next to their fields, and a reset revokes and says so", async () => {
    const user = await registerUser(service);
    const key = await service.clientFor(user).POST("/v1/auth/api-keys", { body: { name: "script", scopes: ["personas:read"] } });
    expect(key.response.status).toBe(201);
    expect((await service.api.POST("/v1/auth/forgot-password", { body: { email: user.email } })).response.status).toBe(200);
    const link = await mailedLink(user.email, "/reset-password");
    expect(`${link.origin}${link.pathname}`).toBe(`${service.url}/reset-password`);

    const opened = await fetch(link);
    expect(opened.status).toBe(200);
    const form = await opened.text();
    expect(form).toContain("8 to 128 characters with at least one digit and one uppercase letter.");
    expect(form).toContain(`<label for="new_password">New password</label>`);
    expect(form).toContain(`<label for="confirm_password">New password again</label>`);
    const fields = hiddenFields(form);

    const mismatch = await post("/reset-password", { ...fields, new_password: "Orion-belt-42", confirm_password: "Orion-belt-43" });
    expect(mismatch.status).toBe(400);
    const mismatchPage = await mismatch.text();
    expect(mismatchPage).toContain(`<p class="field-error" id="confirm-error">The two passwords are not the same`);
    expect(mismatchPage).toMatch(/id="confirm_password"[^>]*aria-invalid="true"/);

    const short = await post("/reset-password", { ...fields, new_password: "Ab1", confirm_password: "Ab1" });
    expect(short.status).toBe(400);
    expect(await short.text()).toContain("Use at least 8 characters (this one has 3).");
    const weak = await post("/reset-password", { ...fields, new_password: "all-lowercase-1", confirm_password: "all-lowercase-1" });
    expect(weak.status).toBe(400);
    const weakPage = await weak.text();
    expect(weakPage).toContain("Too weak: the password needs at least one digit and one uppercase letter.");
    expect(weakPage).toMatch(/id="new_password"[^>]*aria-describedby="password-rule password-error" aria-invalid="true"/);
    // None of that spent the token or changed anything.
    expect((await service.clientFor(user).GET("/v1/auth/me")).response.status).toBe(200);

    const forged = await post("/reset-password", { token: fields.token!, csrf_token: "", new_password: "Orion-belt-42", confirm_password: "Orion-belt-42" });
    expect(forged.status).toBe(403);

    const reset = await post("/reset-password", { ...fields, new_password: "Orion-belt-42", confirm_password: "Orion-belt-42" });
    expect(reset.status).toBe(200);
    const done = await reset.text();
    expect(done).toContain("Your password was changed.");
    expect(done).toContain("1 sign-in ended");
    expect(done).toContain("1 API key revoked");
    // What the API's reset revokes, revoked: the session and the key; the new password signs in.
    expect((await service.clientFor(user).GET("/v1/auth/me")).response.status).toBe(401);
    expect((await service.clientFor({ auth: { "x-api-key": key.data!.key } }).GET("/v1/auth/me")).response.status).toBe(401);
    expect((await service.api.POST("/v1/auth/login", { body: { email: user.email, password: "Orion-belt-42" } })).response.status).toBe(200);
    const used = await fetch(link);
    expect(used.status).toBe(410);
    expect(await used.text()).toContain("This link was already used");
  });

  it("an expired link gets its own page, 410, for both mails; a link without a token 400, an unknown token 404", async () => {
    const user = await registerUser(service);
    const verify = await mailedLink(user.email, "/verify-email");
    expect((await service.api.POST("/v1/auth/forgot-password", { body: { email: user.email } })).response.status).toBe(200);
    const reset = await mailedLink(user.email, "/reset-password");
    clock = new Date(Date.now() + 25 * 60 * 60 * 1000);
    try {
      for (const link of [verify, reset]) {
        const expired = await fetch(link);
        expect(expired.status).toBe(410);
        expect(await expired.text()).toContain("This link has expired");
      }
    } finally {
      clock = undefined;
    }
    for (const [path, status, text] of [
      ["/verify-email", 400, "This link is incomplete"],
      ["/reset-password?token=", 400, "This link is incomplete"],
      ["/verify-email?token=vt_never_issued", 404, "This link does not work"],
      ["/reset-password?token=rp_never_issued", 404, "This link does not work"],
    ] as const) {
      const response = await service.fetch(path);
      expect(response.status, path).toBe(status);
      expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(await response.text()).toContain(text);
    }
  });

  it("share and publish: the links lead to this service's persona and listing pages", async () => {
    const creator = await registerUser(service);
    await service.services.db.knex("users").where({ id: creator.id }).update({ plan: "creator" });
    const persona = await service.clientFor(creator).POST("/v1/personas", { body: { name: "Linked Nova", instructions: "Be kind.", is_public: true } });
    const shared = await service.clientFor(creator).POST("/v1/social/share/{persona_id}", { params: { path: { persona_id: persona.data!.id } }, body: { platform: "link" } });
    const opened = await fetch(shared.data!.share_url);
    expect(opened.url).toBe(`${service.url}/p/${persona.data!.id}`);
    expect(opened.status).toBe(200);
    expect(await opened.text()).toContain("<h1>Linked Nova</h1>");

    const published = await service.clientFor(creator).POST("/v1/studio/{persona_id}/publish", { params: { path: { persona_id: persona.data!.id } }, body: { tags: [], pricing: "free" } });
    expect(published.data!.marketplace_url).toBe(`${service.url}/marketplace/${published.data!.id}`);
    const listing = await fetch(published.data!.marketplace_url);
    expect(listing.status).toBe(200);
    expect(await listing.text()).toContain("Use this persona");
  });
});

describe("with APP_BASE_URL: the links name the app's origin and the documented paths", () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ env: { SMTP_URL: smtp.url, APP_BASE_URL: `${APP}/` } });
  });

  afterAll(() => service?.close());

  it("the e-mails' links are <APP_BASE_URL>/verify-email?token=… and /reset-password?token=…, and their tokens work with the API", async () => {
    const user = await registerUser(service);
    const verify = await mailedLink(user.email, "/verify-email");
    expect(`${verify.origin}${verify.pathname}`).toBe(`${APP}/verify-email`);
    expect([...verify.searchParams.keys()]).toEqual(["token"]);
    // What the app's page does with it: the signed-in person's confirmation through the API.
    const confirmed = await service.clientFor(user).POST("/v1/auth/verify-email", { body: { token: verify.searchParams.get("token")! } });
    expect(confirmed.response.status).toBe(200);

    expect((await service.api.POST("/v1/auth/forgot-password", { body: { email: user.email } })).response.status).toBe(200);
    const reset = await mailedLink(user.email, "/reset-password");
    expect(`${reset.origin}${reset.pathname}`).toBe(`${APP}/reset-password`);
    const changed = await service.api.POST("/v1/auth/reset-password", { body: { token: reset.searchParams.get("token")!, new_password: "Andromeda-31" } });
    expect(changed.response.status).toBe(200);
  });

  it("a share link redirects to <APP_BASE_URL>/p/<id>, publishing answers <APP_BASE_URL>/marketplace/<id>; API links keep the service's address", async () => {
    const creator = await registerUser(service);
    await service.services.db.knex("users").where({ id: creator.id }).update({ plan: "creator" });
    const persona = await service.clientFor(creator).POST("/v1/personas", { body: { name: "App Nova", instructions: "Be kind.", is_public: true } });
    const id = persona.data!.id;
    const shared = await service.clientFor(creator).POST("/v1/social/share/{persona_id}", { params: { path: { persona_id: id } }, body: { platform: "link" } });
    // The share link itself is the API's.
    expect(shared.data!.share_url.startsWith(`${service.url}/v1/shares/`)).toBe(true);
    const redirect = await fetch(shared.data!.share_url, { redirect: "manual" });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get("location")).toBe(`${APP}/p/${id}`);

    const published = await service.clientFor(creator).POST("/v1/studio/{persona_id}/publish", { params: { path: { persona_id: id } }, body: { tags: [], pricing: "free" } });
    expect(published.data!.marketplace_url).toBe(`${APP}/marketplace/${published.data!.id}`);

    // The service's own page still serves, naming the app's page as canonical, its card on the API.
    const html = await (await service.fetch(`/p/${id}`)).text();
    expect(tags(html, "meta").find((meta) => meta.property === "og:url")?.content).toBe(`${APP}/p/${id}`);
    expect(tags(html, "meta").find((meta) => meta.property === "og:image")?.content?.startsWith(`${service.url}/p/${id}/card.png?v=`)).toBe(true);
    // oEmbed answers for the app's page: an app's page names it in its own discovery link.
    const embed = await service.api.GET("/oembed", { params: { query: { url: `${APP}/p/${id}` } } });
    expect(embed.response.status).toBe(200);
    expect(embed.data).toMatchObject({ title: "App Nova", provider_url: `${APP}/` });
  });
});
