import { PNG } from "pngjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { decodeEntities, metaOf, tags, unfurl } from "./unfurl.ts";

// The public pages a share link and a publish URL lead to, read as a browser and as the link
// unfurlers of forums and messengers read them: escaped hostile text, Open Graph and Twitter tags,
// the oEmbed answer, the card image and its version, 404 pages (docs/design/pages.md).
let service: TestService;
let creator: TestUser;
let fan: TestUser;

/** A persona's text a hostile creator would write: markup, an attribute break-out, a script. */
const HOSTILE_NAME = `Nova"><script>alert(1)</script>`;
const HOSTILE_DESCRIPTION = `Guide & <img src=x onerror=alert(2)> friend. Knows "quotes" and 'apostrophes'.`;

async function persona(user: TestUser, fields: { name: string; description?: string; greeting_message?: string; is_public?: boolean }) {
  const { data, response } = await service.clientFor(user).POST("/v1/personas", { body: { instructions: "You are kind.", is_public: true, ...fields } });
  expect(response.status).toBe(201);
  return data!;
}

async function page(path: string): Promise<{ status: number; html: string; headers: Headers }> {
  const response = await service.fetch(path);
  return { status: response.status, html: await response.text(), headers: response.headers };
}

beforeAll(async () => {
  service = await startTestService();
  creator = await registerUser(service);
  fan = await registerUser(service);
  expect((await service.clientFor(creator).PUT("/v1/auth/me", { body: { display_name: "Mara <Okafor>" } })).response.status).toBe(200);
  // Publishing needs a creator plan.
  await service.services.db.knex("users").where({ id: creator.id }).update({ plan: "creator" });
});

afterAll(() => service?.close());

describe("a public persona's page", () => {
  it("shows the persona with every hostile text escaped, its counts, and its greeting as a visitor reads it", async () => {
    const nova = await persona(creator, { name: HOSTILE_NAME, description: HOSTILE_DESCRIPTION, greeting_message: "Hello {{user}}, I am {{char}}. <b>bold?</b>" });
    expect((await service.clientFor(fan).POST("/v1/social/likes/{persona_id}", { params: { path: { persona_id: nova.id } } })).response.status).toBe(200);
    expect((await service.clientFor(fan).POST("/v1/conversations", { body: { persona_id: nova.id } })).response.status).toBe(201);

    const { status, html, headers } = await page(`/p/${nova.id}`);
    expect(status).toBe(200);
    expect(headers.get("content-type")).toBe("text/html; charset=utf-8");
    // Nothing the creator wrote became markup.
    expect(html).not.toContain("<script>alert");
    expect(html).not.toContain("<img src=x");
    expect(html).not.toContain("<b>bold?</b>");
    expect(html).toContain("Nova&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).toContain("Guide &amp; &lt;img src=x onerror=alert(2)&gt; friend.");
    expect(html).toContain("Mara &lt;Okafor&gt;");
    // The page's own markup is the only markup: one <script> would be one too many.
    expect(tags(html, "script")).toHaveLength(0);
    expect(tags(html, "img").every((img) => img.onerror === undefined)).toBe(true);
    // Macros filled as a visitor reads them.
    expect(html).toContain(`Hello you, I am Nova&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;. &lt;b&gt;bold?&lt;/b&gt;`);
    expect(html).toMatch(/<strong>1<\/strong> like</);
    expect(html).toMatch(/<strong>1<\/strong> conversation</);
    expect(html).toContain(`persona chat ${nova.id}`);
  });

  it("is sent with a strict policy: nothing inline but its hashed stylesheet, no framing, no referrer", async () => {
    const nova = await persona(creator, { name: "Policy Nova" });
    const { headers, html } = await page(`/p/${nova.id}`);
    const csp = headers.get("content-security-policy")!;
    expect(csp).toMatch(/^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/]+=*'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'$/);
    expect(csp).not.toContain("unsafe-inline");
    expect(headers.get("x-frame-options")).toBe("DENY");
    expect(headers.get("referrer-policy")).toBe("no-referrer");
    expect(headers.get("x-content-type-options")).toBe("nosniff");
    // Readable on a phone, in both schemes.
    expect(html).toContain(`<meta name="viewport" content="width=device-width, initial-scale=1">`);
    expect(html).toContain("prefers-color-scheme:dark");
    // Nothing loads from another host: every src and href is this service's own or its public base.
    for (const tag of [...tags(html, "img"), ...tags(html, "link")]) {
      const target = tag.src ?? tag.href ?? "";
      expect(target.startsWith("/") || target.startsWith(service.url), target).toBe(true);
    }
  });

  it("carries Open Graph and Twitter tags, a canonical link and oEmbed discovery", async () => {
    const nova = await persona(creator, { name: "Captain Nova", description: "A retired captain who explains astronomy. She loves comets." });
    const { html } = await page(`/p/${nova.id}`);
    const meta = metaOf(html);
    const pageUrl = `${service.url}/p/${nova.id}`;
    expect(meta).toMatchObject({
      "og:type": "website",
      "og:title": "Captain Nova",
      "og:description": "A retired captain who explains astronomy. She loves comets.",
      "og:url": pageUrl,
      "og:image:width": "1200",
      "og:image:height": "630",
      "twitter:card": "summary_large_image",
      "twitter:title": "Captain Nova",
    });
    expect(meta["og:image"]).toMatch(new RegExp(`^${service.url}/p/${nova.id}/card\\.png\\?v=[0-9a-f]{16}$`));
    expect(meta["twitter:image"]).toBe(meta["og:image"]);
    expect(tags(html, "link").find((link) => link.rel === "canonical")?.href).toBe(pageUrl);
    const discovery = tags(html, "link").find((link) => link.type === "application/json+oembed")!;
    expect(discovery.href).toBe(`${service.url}/oembed?url=${encodeURIComponent(pageUrl)}&format=json`);
  });

  it("ignores query parameters it does not read: a shared link gains utm_* and fbclid", async () => {
    const nova = await persona(creator, { name: "Tracked Nova" });
    const tracked = await page(`/p/${nova.id}?utm_source=forum&fbclid=abc`);
    expect(tracked.status).toBe(200);
    expect(tracked.html).toContain("<h1>Tracked Nova</h1>");
  });

  it("is a 404 page, alike, for a private persona, a deleted one, an unknown id and a malformed one", async () => {
    const secret = await persona(creator, { name: "Secret Nova", is_public: false });
    const gone = await persona(creator, { name: "Gone Nova" });
    expect((await service.clientFor(creator).DELETE("/v1/personas/{id}", { params: { path: { id: gone.id } } })).response.status).toBe(200);
    const bodies = new Set<string>();
    for (const path of [`/p/${secret.id}`, `/p/${gone.id}`, "/p/0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01", "/p/not-an-id", `/p/${secret.id}/card.png`]) {
      const { status, html, headers } = await page(path);
      expect(status, path).toBe(404);
      expect(headers.get("content-type"), path).toBe("text/html; charset=utf-8");
      expect(html).toContain("This persona is not available");
      expect(html).not.toContain("Secret Nova");
      bodies.add(html);
    }
    expect(bodies.size).toBe(1);
    const listing = await page("/marketplace/0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01");
    expect(listing.status).toBe(404);
    expect(listing.html).toContain("This marketplace listing is not available");
  });
});

describe("a share link, unfurled", () => {
  it("redirects to the page, whose tags name a 1200×630 PNG card, as Discord and Slack read them", async () => {
    const nova = await persona(creator, { name: "Shared Nova", description: "Explains the night sky. Ask about Orion." });
    const shared = await service.clientFor(creator).POST("/v1/social/share/{persona_id}", { params: { path: { persona_id: nova.id } }, body: { platform: "microblog" } });
    expect(shared.response.status).toBe(200);

    const card = await unfurl(shared.data!.share_url);
    expect(card.hops).toEqual([shared.data!.share_url, `${service.url}/p/${nova.id}`]);
    expect(card.status).toBe(200);
    expect(card.meta["og:title"]).toBe("Shared Nova");
    expect(card.meta["og:description"]).toBe("Explains the night sky. Ask about Orion.");
    expect(card.image).toMatchObject({ status: 200, type: "image/png", width: 1200, height: 630 });
    expect(card.oembed).toBeDefined();

    // The oEmbed answer the discovery link names.
    const answer = await (await fetch(card.oembed!)).json();
    expect(answer).toMatchObject({ version: "1.0", type: "link", title: "Shared Nova", provider_name: "Persona", thumbnail_url: card.image!.url, thumbnail_width: 1200, thumbnail_height: 630 });
  });

  it("gets a new card version when the persona changes: the ETag and the image link both change", async () => {
    const nova = await persona(creator, { name: "Changing Nova", description: "Before." });
    const before = await unfurl(`${service.url}/p/${nova.id}`);
    const etag = before.image!.etag!;
    expect(etag).toMatch(/^"[0-9a-f]{16}"$/);

    // The same version is not sent again.
    const cached = await service.fetch(new URL(before.image!.url).pathname + new URL(before.image!.url).search, { headers: { "if-none-match": etag } });
    expect(cached.status).toBe(304);
    const versioned = await service.fetch(new URL(before.image!.url).pathname + new URL(before.image!.url).search);
    expect(versioned.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");

    expect((await service.clientFor(creator).PUT("/v1/personas/{id}", { params: { path: { id: nova.id } }, body: { name: "Changed Nova" } })).response.status).toBe(200);
    const after = await unfurl(`${service.url}/p/${nova.id}`);
    expect(after.meta["og:title"]).toBe("Changed Nova");
    expect(after.image!.url).not.toBe(before.image!.url);
    expect(after.image!.etag).not.toBe(etag);
    expect(after.image).toMatchObject({ width: 1200, height: 630 });
    const stale = await service.fetch(`/p/${nova.id}/card.png`, { headers: { "if-none-match": etag } });
    expect(stale.status).toBe(200);
    expect(PNG.sync.read(Buffer.from(await stale.arrayBuffer())).width).toBe(1200);
  });
});

describe("oEmbed", () => {
  it("answers a link for a persona's page; 404 for a private persona or another site's URL; 501 for XML", async () => {
    const nova = await persona(creator, { name: "Embedded Nova" });
    const secret = await persona(creator, { name: "Hidden Nova", is_public: false });
    const pageUrl = `${service.url}/p/${nova.id}`;

    const { data, response } = await service.api.GET("/oembed", { params: { query: { url: pageUrl, format: "json" } } });
    expect(response.status).toBe(200);
    expect(data).toMatchObject({ version: "1.0", type: "link", title: "Embedded Nova", author_name: "Mara <Okafor>", provider_url: `${service.url}/`, cache_age: 3600 });
    expect(data!.thumbnail_url).toMatch(new RegExp(`^${service.url}/p/${nova.id}/card\\.png\\?v=`));

    for (const url of [`${service.url}/p/${secret.id}`, `https://elsewhere.example/p/${nova.id}`, `${service.url}/v1/personas/${nova.id}`, "not a url"]) {
      const refused = await service.api.GET("/oembed", { params: { query: { url } } });
      expect(refused.response.status, url).toBe(404);
    }
    const xml = await service.api.GET("/oembed", { params: { query: { url: pageUrl, format: "xml" } } });
    expect(xml.response.status).toBe(501);
  });
});

describe("a listing's page, from the URL publish answers", () => {
  it("shows the rating and its distribution, reviews (escaped), samples with macros filled, and how to use it", async () => {
    const nova = await persona(creator, { name: "Listed Nova", description: "Teaches astronomy. Patiently.", greeting_message: "Welcome aboard, {{user}}! {{char}} at your service." });
    const published = await service.clientFor(creator).POST("/v1/studio/{persona_id}/publish", { params: { path: { persona_id: nova.id } }, body: { tags: ["astronomy"], pricing: "free" } });
    expect(published.response.status).toBe(200);
    const listingUrl = published.data!.marketplace_url;
    expect(listingUrl).toBe(`${service.url}/marketplace/${published.data!.id}`);
    const rated = await service.clientFor(fan).POST("/v1/marketplace/{id}/rate", { params: { path: { id: published.data!.id } }, body: { rating: 4, review: "Great <script>alert(3)</script> teacher" } });
    expect(rated.response.status).toBe(201);

    const response = await fetch(listingUrl);
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain("<h1>Listed Nova</h1>");
    expect(html).toContain("Great &lt;script&gt;alert(3)&lt;/script&gt; teacher");
    expect(html).not.toContain("<script>");
    expect(html).toContain("4 out of 5");
    expect(html).toMatch(/<meter min="0" max="1" value="1" aria-labelledby="dist-4"><\/meter>/);
    // Sample messages as a visitor reads them: no macro left.
    expect(html).toContain("Welcome aboard, you! Listed Nova at your service.");
    expect(html).not.toContain("{{");
    expect(html).toContain(`persona marketplace use ${published.data!.id}`);
    expect(html).toContain(`href="/p/${nova.id}"`);
    // The persona's page links its listing back.
    expect((await page(`/p/${nova.id}`)).html).toContain(`href="/marketplace/${published.data!.id}"`);
    // And it unfurls with the persona's card; oEmbed takes the listing's URL too.
    const card = await unfurl(listingUrl);
    expect(card.meta["og:url"]).toBe(listingUrl);
    expect(card.image).toMatchObject({ width: 1200, height: 630 });
    const embed = await service.api.GET("/oembed", { params: { query: { url: listingUrl } } });
    expect(embed.data).toMatchObject({ title: "Listed Nova", type: "link" });
    expect(decodeEntities(card.meta["og:image"]!)).toContain(`/p/${nova.id}/card.png?v=`);
  });
});

describe("the pages' inventory", () => {
  it("answers only the pages the contract declares: other methods and paths under their prefixes are the API's 404", async () => {
    const nova = await persona(creator, { name: "Inventory Nova" });
    const served = [`GET /p/${nova.id}`, `GET /p/${nova.id}/card.png`, "GET /verify-email", "POST /verify-email", "GET /reset-password", "POST /reset-password"];
    for (const request of served) {
      const [method, path] = request.split(" ") as [string, string];
      const response = await service.fetch(path, { method, ...(method === "POST" ? { headers: { "content-type": "application/x-www-form-urlencoded" }, body: "token=x" } : {}) });
      expect(response.headers.get("content-type"), request).toMatch(/^(text\/html|image\/png)/);
    }
    const refused = [`HEAD /p/${nova.id}`, `PUT /p/${nova.id}`, `DELETE /p/${nova.id}`, `POST /p/${nova.id}`, `GET /p/${nova.id}/other`, `GET /p`, "PUT /verify-email", "DELETE /reset-password", "GET /marketplace", `POST /marketplace/${nova.id}`, "GET /verify-email/extra"];
    for (const request of refused) {
      const [method, path] = request.split(" ") as [string, string];
      const response = await service.fetch(path, { method });
      expect(response.status, request).toBe(404);
      if (method !== "HEAD") expect(await response.json(), request).toMatchObject({ error: { code: "not_found" } });
    }
  });
});
