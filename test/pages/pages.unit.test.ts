import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../server/toolkit/config.ts";
import { listingPageLink, personBaseUrl, personaPageLink, resetPasswordLink, verifyEmailLink } from "../../server/toolkit/person-links.ts";
import { html, trusted } from "../../server/areas/pages/html.ts";
import { contentSecurityPolicy, pageHeaders } from "../../server/areas/pages/policy.ts";
import { passwordProblem, PASSWORD_RULE_TEXT } from "../../server/areas/pages/password-rule.ts";
import { cardSvg, cardVersion, wrap } from "../../server/areas/pages/card-drawing.ts";

// The page layer's rules on their own: where person-facing links lead, the one escaping rule, the
// pages' policy, the password rule read from the contract, and the card's text layout.

const ID = "0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01";

describe("person-facing links", () => {
  it("lead to the service itself without APP_BASE_URL, to the app's documented paths with it", () => {
    const own = loadConfig({ PUBLIC_BASE_URL: "https://api.example.test/" });
    expect(personBaseUrl(own)).toBe("https://api.example.test");
    expect(verifyEmailLink(own, "vt_a b")).toBe("https://api.example.test/verify-email?token=vt_a%20b");
    expect(personaPageLink(own, ID)).toBe(`https://api.example.test/p/${ID}`);

    const app = loadConfig({ PUBLIC_BASE_URL: "https://api.example.test", APP_BASE_URL: "https://app.example.test/persona/" });
    expect(verifyEmailLink(app, "vt_x")).toBe("https://app.example.test/persona/verify-email?token=vt_x");
    expect(resetPasswordLink(app, "rp_x")).toBe("https://app.example.test/persona/reset-password?token=rp_x");
    expect(personaPageLink(app, ID)).toBe(`https://app.example.test/persona/p/${ID}`);
    expect(listingPageLink(app, ID)).toBe(`https://app.example.test/persona/marketplace/${ID}`);
  });

  it("APP_BASE_URL must be an http(s) URL without query or fragment", () => {
    for (const value of ["ftp://app.example.test", "app.example.test", "https://app.example.test/?x=1", "https://app.example.test/#top"]) {
      expect(() => loadConfig({ APP_BASE_URL: value }), value).toThrow(ConfigError);
    }
    expect(loadConfig({}).appBaseUrl).toBeUndefined();
  });
});

describe("escaping", () => {
  it("escapes every interpolated text, in content and in quoted attributes; fragments and lists pass as built", () => {
    const hostile = `"><script>alert('x')</script>&`;
    const fragment = html`<p title="${hostile}">${hostile}</p>`;
    expect(fragment.toString()).toBe(`<p title="&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;">&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;</p>`);
    expect(html`<ul>${["<a>", html`<li>${"<b>"}</li>`]}</ul>`.toString()).toBe("<ul>&lt;a&gt;<li>&lt;b&gt;</li></ul>");
    expect(html`${null}${undefined}${false}${0}`.toString()).toBe("0");
    expect(html`${trusted("<hr>")}`.toString()).toBe("<hr>");
  });
});

describe("the pages' policy", () => {
  it("allows only the hashed stylesheet and the service's own images and forms; no framing unless named", () => {
    const strict = contentSecurityPolicy({});
    expect(strict).toMatch(/^default-src 'none'; style-src 'sha256-[^']+'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'$/);
    expect(pageHeaders({ cache: "no-store" })).toMatchObject({ "X-Frame-Options": "DENY", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer" });
    const framed = pageHeaders({ cache: { publicSeconds: 60 }, frameAncestors: ["https://blog.example.test"], scripts: ["'self'"], connect: ["'self'"] });
    expect(framed["Content-Security-Policy"]).toContain("frame-ancestors https://blog.example.test");
    expect(framed["Content-Security-Policy"]).toContain("script-src 'self'; connect-src 'self'");
    expect(framed["X-Frame-Options"]).toBeUndefined();
    expect(framed["Cache-Control"]).toBe("public, max-age=60");
  });
});

describe("the password rule", () => {
  it("is the contract's, stated and checked", () => {
    expect(PASSWORD_RULE_TEXT).toBe("8 to 128 characters with at least one digit and one uppercase letter.");
    expect(passwordProblem("Orion-belt-42")).toBeUndefined();
    expect(passwordProblem("Ab1")).toBe("Use at least 8 characters (this one has 3).");
    expect(passwordProblem("orion-belt-42")).toMatch(/^Too weak/);
    expect(passwordProblem(`A1${"x".repeat(127)}`)).toBe("Use at most 128 characters.");
  });
});

describe("the card", () => {
  it("wraps text to its lines and ends a cut one with an ellipsis", () => {
    expect(wrap("one two three", 20, 2)).toEqual(["one two three"]);
    expect(wrap("alpha beta gamma delta epsilon", 11, 2)).toEqual(["alpha beta", "gamma…"]);
    expect(wrap("supercalifragilistic", 8, 3)).toEqual(["supercal", "ifragili", "stic"]);
  });

  it("escapes the persona's texts in its SVG, and its version follows what it draws", () => {
    const card = { personaId: ID, name: `<Nova & "Co">`, tagline: "</text><script/>", creatorName: "Mara", avatarUrl: null };
    const svg = cardSvg(card, undefined);
    expect(svg).not.toContain("<script");
    expect(svg).toContain("&lt;Nova &amp; &quot;Co&quot;&gt;");
    expect(cardVersion(card)).toMatch(/^[0-9a-f]{16}$/);
    expect(cardVersion({ ...card, name: "Nova" })).not.toBe(cardVersion(card));
    expect(cardVersion({ ...card })).toBe(cardVersion(card));
  });
});
