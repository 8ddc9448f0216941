import { describe, expect, it } from "vitest";
import { renderCheckoutPage } from "../../server/areas/billing/page.ts";
import { returnUrlProblem } from "../../server/areas/billing/return-urls.ts";
import { effectivePlan } from "../../server/areas/billing/sync.ts";
import { ConfigError, loadConfig } from "../../server/toolkit/config.ts";
import { periodEnd } from "../../server/toolkit/providers/payments/catalog.ts";
import type { ProviderSubscription } from "../../server/toolkit/providers/payments/types.ts";

// The rules of billing that need no server: return addresses, the plan a provider state gives, the
// page's escaping, period arithmetic.

const config = (env: Record<string, string> = {}) => loadConfig({ NODE_ENV: "development", ...env });

describe("checkout return addresses", () => {
  it("are absolute http(s) URLs without credentials", () => {
    const open = config();
    expect(returnUrlProblem(open, "https://app.example.com/done")).toBeUndefined();
    expect(returnUrlProblem(open, "http://localhost:5173/done")).toBeUndefined();
    expect(returnUrlProblem(open, "javascript:alert(1)")).toMatch(/http\(s\)/);
    expect(returnUrlProblem(open, "JavaScript:alert(1)")).toMatch(/http\(s\)/);
    expect(returnUrlProblem(open, "data:text/html,x")).toMatch(/http\(s\)/);
    expect(returnUrlProblem(open, "/relative")).toMatch(/absolute/);
    expect(returnUrlProblem(open, "https://user:pw@app.example.com/")).toMatch(/credentials/);
  });

  it("in production are HTTPS only, and with BILLING_REDIRECT_ORIGINS only those origins", () => {
    const production = config({ NODE_ENV: "production" });
    expect(returnUrlProblem(production, "http://app.example.com/done")).toMatch(/https/);
    expect(returnUrlProblem(production, "https://app.example.com/done")).toBeUndefined();
    const listed = config({ NODE_ENV: "production", BILLING_REDIRECT_ORIGINS: "https://app.example.com, http://localhost:5173/" });
    expect(listed.billing.redirectOrigins).toEqual(["https://app.example.com", "http://localhost:5173"]);
    expect(returnUrlProblem(listed, "https://app.example.com/billing?ok=1")).toBeUndefined();
    expect(returnUrlProblem(listed, "http://localhost:5173/x")).toBeUndefined();
    expect(returnUrlProblem(listed, "https://evil.example.net/")).toMatch(/allowed origins/);
    expect(returnUrlProblem(listed, "https://app.example.com.evil.example.net/")).toMatch(/allowed origins/);
    expect(() => config({ BILLING_REDIRECT_ORIGINS: "app.example.com" })).toThrow(ConfigError);
    expect(() => config({ BILLING_REDIRECT_ORIGINS: "ftp://files.example.com" })).toThrow(ConfigError);
  });
});

describe("the plan a provider state gives", () => {
  const start = new Date("2026-11-05T09:00:00Z");
  const end = new Date("2026-12-05T09:00:00Z");
  const base: ProviderSubscription = {
    id: "sub_1", customerId: "cus_1", status: "active", plan: "pro", interval: "month", currentPeriodStart: start, currentPeriodEnd: end,
    cancelAt: null, canceledAt: null, endedAt: null, scheduled: null, createdAt: start,
  };
  const before = new Date("2026-11-20T00:00:00Z");
  const after = new Date("2026-12-05T09:00:01Z");

  it("is the billed plan while active or in the provider's payment retries", () => {
    expect(effectivePlan(base, before)).toBe("pro");
    expect(effectivePlan({ ...base, status: "past_due" }, before)).toBe("pro");
    expect(effectivePlan({ ...base, status: "trialing" }, before)).toBe("pro");
  });

  it("is free once ended, unpaid, never paid, or past a cancellation's date", () => {
    for (const status of ["canceled", "unpaid", "incomplete", "incomplete_expired", "paused"]) expect(effectivePlan({ ...base, status }, before)).toBe("free");
    const cancelling = { ...base, cancelAt: end, canceledAt: start };
    expect(effectivePlan(cancelling, before)).toBe("pro");
    expect(effectivePlan(cancelling, after)).toBe("free");
  });

  it("is the scheduled plan once its moment has passed, even before the provider moved", () => {
    const downgrading = { ...base, scheduled: { plan: "plus" as const, at: end } };
    expect(effectivePlan(downgrading, before)).toBe("pro");
    expect(effectivePlan(downgrading, end)).toBe("plus");
  });
});

describe("periods", () => {
  it("end on the same day of the next month or year, clamped to the month's end", () => {
    expect(periodEnd(new Date("2026-01-31T10:00:00Z"), "month").toISOString()).toBe("2026-02-28T10:00:00.000Z");
    expect(periodEnd(new Date("2028-02-29T10:00:00Z"), "year").toISOString()).toBe("2029-02-28T10:00:00.000Z");
    expect(periodEnd(new Date("2026-11-05T09:00:00Z"), "month").toISOString()).toBe("2026-12-05T09:00:00.000Z");
  });
});

describe("the local checkout page", () => {
  it("escapes every value it shows", () => {
    const hostile = 'https://app.example.com/"><script>alert(1)</script>';
    const checkout = {
      id: '"><img src=x onerror=alert(1)>',
      plan: "plus" as const,
      interval: "month" as const,
      amount: 999,
      currency: "usd",
      successUrl: hostile,
      cancelUrl: hostile,
      status: "complete" as const,
      expiresAt: new Date(),
      subscribed: false,
    };
    for (const [status, subscribed] of [["open", false], ["open", true], ["complete", false], ["expired", false]] as const) {
      const html = renderCheckoutPage({ ...checkout, status, subscribed }, '"><b>token');
      expect(html).not.toMatch(/<script>|<img|<b>/);
      expect(html).not.toContain('"><');
    }
    expect(renderCheckoutPage({ ...checkout, status: "complete" }, "t")).toContain("&quot;&gt;&lt;script&gt;");
  });
});
