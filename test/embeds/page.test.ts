import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkAnswer } from "../../conformance/support/check.ts";
import { expectOk } from "../support/assertions.ts";
import { operation } from "../support/contract.ts";
import { createPersona } from "../support/chat.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { embeddedPersona, OTHER_SITE, SHOP } from "./helpers.ts";

// The embed's browser side (issue 36 item 3): the loader script (small, cached), the chat page
// framed only by the persona's allowed origins, under a policy with no inline script, with the
// persona's hostile texts as text; the not-found page for anything not embeddable. All three are
// operations of the contract served as pages (`@meta` `page`, spec/embeds.tsp): each answer is
// held to the contract here, but not their query.

let service: TestService;
let owner: TestUser;

beforeAll(async () => {
  service = await startTestService({ env: { DEFAULT_PLAN: "creator" } });
  owner = await registerUser(service);
});

afterAll(async () => {
  await service?.close();
});

/** What the contract finds wrong with an answer of `operationId`; `read` is its body when the test read it already. */
async function contractProblems(operationId: string, answer: Response, read?: string): Promise<string[]> {
  const text = read ?? (await answer.clone().text());
  const contentType = (answer.headers.get("content-type") ?? "").split(";")[0]!.trim();
  return checkAnswer(operation(operationId), { status: answer.status, headers: answer.headers, contentType, text }).problems;
}

const directives = (policy: string | null) => new Map((policy ?? "").split(";").map((part) => part.trim().split(/\s+/)).map(([name, ...sources]) => [name!, sources]));

describe("the embed's loader script", () => {
  it("is served small, cacheable for minutes, loadable by any site; its gzipped size is printed", async () => {
    const answer = await service.fetch("/embed.js");
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(answer.headers.get("cache-control")).toBe("public, max-age=300");
    expect(answer.headers.get("cross-origin-resource-policy")).toBe("cross-origin");
    expect(answer.headers.get("x-content-type-options")).toBe("nosniff");
    const body = Buffer.from(await answer.arrayBuffer());
    const gzipped = gzipSync(body, { level: 9 }).byteLength;
    console.info(`embed.js: ${body.byteLength} bytes, ${gzipped} bytes gzipped`);
    expect(gzipped).toBeLessThan(30 * 1024);
    // No dependency: nothing is imported or fetched from anywhere by the loader itself.
    expect(body.toString()).not.toMatch(/\bimport\b|fetch\(|XMLHttpRequest/);
    expect(await contractProblems("embed_pages_loader", answer, body.toString())).toEqual([]);
    const again = await service.fetch("/embed.js", { headers: { "if-none-match": answer.headers.get("etag")! } });
    expect(again.status).toBe(304);
    expect(await contractProblems("embed_pages_loader", again)).toEqual([]);
  });

  it("names the chat script by its version, which is then cached for good", async () => {
    const persona = await embeddedPersona(service, owner);
    const page = await (await service.fetch(`/embed/${persona.id}`)).text();
    const src = /<script src="([^"]+)" defer><\/script>/.exec(page)?.[1];
    expect(src).toMatch(/^\/embed\/assets\/chat\.js\?v=[0-9a-f]{16}$/);
    const script = await service.fetch(src!);
    expect(script.status).toBe(200);
    expect(script.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(await contractProblems("embed_pages_chat_script", script)).toEqual([]);
    const unversioned = await service.fetch("/embed/assets/chat.js");
    expect(unversioned.headers.get("cache-control")).toBe("public, max-age=300");
    const chat = gzipSync(Buffer.from(await script.arrayBuffer()), { level: 9 }).byteLength;
    console.info(`chat page script: ${chat} bytes gzipped; chat page: ${gzipSync(page).byteLength} bytes gzipped`);
  });
});

describe("the embed's chat page", () => {
  it("may be framed by the persona's allowed origins only, runs only the service's own script, and loads nothing from elsewhere", async () => {
    const persona = await embeddedPersona(service, owner, [SHOP, "http://localhost:5173"]);
    const answer = await service.fetch(`/embed/${persona.id}`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(answer.headers.get("x-frame-options")).toBeNull();
    expect(answer.headers.get("cache-control")).toBe("no-store");
    const policy = answer.headers.get("content-security-policy");
    const csp = directives(policy);
    expect(csp.get("default-src")).toEqual(["'none'"]);
    expect(csp.get("frame-ancestors")).toEqual([SHOP, "http://localhost:5173"]);
    expect(csp.get("script-src")).toEqual(["'self'"]);
    expect(csp.get("connect-src")).toEqual(["'self'"]);
    expect(csp.get("media-src")).toEqual(["blob:"]);
    expect(policy).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    const page = await answer.text();
    // No inline script, no event handler attribute, nothing from another host.
    expect(page).not.toMatch(/<script(?![^>]*\ssrc=)/);
    expect(page).not.toMatch(/\son[a-z]+=/i);
    expect(page).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(page).toContain("Welcome aboard!");
    expect(await contractProblems("embed_pages_chat_page", answer, page)).toEqual([]);
  });

  it("is a page of the contract: any query is read past (a link's utm_*, the loader's bubble and host), and a method or HEAD it does not declare is the API's 404", async () => {
    const persona = await embeddedPersona(service, owner);
    const linked = await service.fetch(`/embed/${persona.id}?bubble=1&host=${encodeURIComponent(SHOP)}&utm_source=newsletter&fbclid=x`);
    expect(linked.status).toBe(200);
    expect(linked.headers.get("content-type")).toBe("text/html; charset=utf-8");
    // The pipeline's own headers, as on every operation.
    expect(linked.headers.get("x-ratelimit-limit")).toMatch(/^\d+$/);
    expect((await service.fetch("/embed.js?utm_source=x&v=")).status).toBe(200);
    expect((await service.fetch("/embed/assets/chat.js?v=not-the-version&utm_source=x")).headers.get("cache-control")).toBe("public, max-age=300");
    // The contract declares GET only: HEAD is unknown, as for the built-in pages.
    for (const [method, path] of [["HEAD", `/embed/${persona.id}`], ["POST", `/embed/${persona.id}`], ["POST", "/embed.js"], ["DELETE", "/embed/assets/chat.js"]] as const) {
      const answer = await service.fetch(path, { method });
      expect(answer.status, `${method} ${path}`).toBe(404);
      if (method !== "HEAD") expect(await answer.json(), `${method} ${path}`).toMatchObject({ error: { code: "not_found" } });
    }
  });

  it("is the not-found page, framed by nobody, for a persona not embeddable", async () => {
    const disabled = await createPersona(service, owner, { is_public: true });
    const hidden = await createPersona(service, owner, { is_public: false });
    for (const path of [`/embed/${disabled.id}`, `/embed/${hidden.id}`, "/embed/0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6aff", "/embed/not-a-persona"]) {
      const answer = await service.fetch(path);
      expect(answer.status, path).toBe(404);
      expect(answer.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(directives(answer.headers.get("content-security-policy")).get("frame-ancestors")).toEqual(["'none'"]);
      expect(answer.headers.get("x-frame-options")).toBe("DENY");
      expect(await contractProblems("embed_pages_chat_page", answer), path).toEqual([]);
    }
  });

  it("refuses to open as a page of its own (Sec-Fetch-Dest: document): it chats on the site that embeds it", async () => {
    const persona = await embeddedPersona(service, owner);
    const opened = await service.fetch(`/embed/${persona.id}`, { headers: { "sec-fetch-dest": "document" } });
    expect(opened.status).toBe(403);
    expect(directives(opened.headers.get("content-security-policy")).get("frame-ancestors")).toEqual(["'none'"]);
    expect(await contractProblems("embed_pages_chat_page", opened)).toEqual([]);
    expect((await service.fetch(`/embed/${persona.id}`, { headers: { "sec-fetch-dest": "iframe" } })).status).toBe(200);
  });

  it("shows the persona's hostile name and greeting as text", async () => {
    const hostile = {
      name: `<img src=x onerror="parent.hacked=1">`,
      greeting_message: `</div><script>parent.hacked=2</script>"'><svg onload=alert(3)> Hello {{user}}, I am {{char}}`,
      description: `<iframe src="javascript:alert(4)">`,
    };
    const persona = await embeddedPersona(service, owner, [SHOP], hostile);
    const page = await (await service.fetch(`/embed/${persona.id}`)).text();
    expect(page).not.toContain("<img src=x");
    expect(page).not.toContain("<script>parent");
    expect(page).not.toContain("<svg");
    expect(page).toContain("&lt;img src=x onerror=&quot;parent.hacked=1&quot;&gt;");
    expect(page).toContain("&lt;/div&gt;&lt;script&gt;parent.hacked=2&lt;/script&gt;");
    // The greeting's macros are filled for an anonymous visitor.
    expect(page).toContain("Hello you, I am &lt;img src=x");
    // The settings' snippet names the persona by id only.
    const settings = await expectOk(service.clientFor(owner).GET("/v1/personas/{id}/embed", { params: { path: { id: persona.id } } }));
    expect(settings.snippet).not.toContain("<img");
  });

  it("has the same policy whichever site asks for it: framing is the browser's to refuse", async () => {
    const persona = await embeddedPersona(service, owner);
    const asked = await service.fetch(`/embed/${persona.id}`, { headers: { referer: `${OTHER_SITE}/`, "sec-fetch-dest": "iframe", "sec-fetch-site": "cross-site" } });
    expect(asked.status).toBe(200);
    expect(directives(asked.headers.get("content-security-policy")).get("frame-ancestors")).toEqual([SHOP]);
  });
});
