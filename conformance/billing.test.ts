import { beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { idOr, PLACEHOLDER_ID } from "./support/placeholders.ts";
import { target } from "./support/target.ts";

const RETURN = { success_url: "https://app.conformance.example/billing/success", cancel_url: "https://app.conformance.example/billing/cancelled" };

// One account goes through the whole flow on the offline payments provider (the real target runs
// without Stripe): usage, checkout, the local checkout page and its form, the subscription, a plan
// change, invoices, the portal, the cancellation. The webhook answers 400: only Stripe can sign.
describe("billing", () => {
  let user: TestUser;
  let sessionId: string | undefined;
  let csrfToken: string | undefined;

  beforeAll(async () => {
    user = await registerUser("billing");
  });

  op("billing_usage", async () => {
    const answer = await call("billing_usage", { token: user.token, expect: [200] });
    if (target.stateful) expect(answer.json).toMatchObject({ plan: "free", usage: { messages_sent: 0, personas_limit: 3 } });
  });

  op("billing_checkout", async () => {
    const answer = await call("billing_checkout", { token: user.token, json: { plan: "plus", interval: "month", ...RETURN }, expect: [200] });
    sessionId = (answer.json as { session_id: string }).session_id;
  });

  // The offline payments provider's checkout page and its form: the browser's part of a checkout.
  op("billing_local_checkout_page", async () => {
    const answer = await call("billing_local_checkout_page", { path: { session_id: idOr(sessionId) }, expect: [200] });
    if (answer.status === 200) expect(answer.text).toMatch(/<form/i);
    csrfToken = /name="csrf_token" value="([^"]+)"/.exec(answer.text)?.[1];
  });

  op("billing_local_checkout_complete", async () => {
    // The mock's page is the contract's example, without a token: a placeholder keeps the body valid.
    const session = csrfToken ? idOr(sessionId) : PLACEHOLDER_ID;
    const answer = await call("billing_local_checkout_complete", { path: { session_id: session }, form: { action: "pay", csrf_token: csrfToken ?? "0.placeholder" }, expect: [303] });
    if (target.stateful && answer.status === 303) expect(answer.headers.get("location")).toBe(RETURN.success_url);
  });

  op("billing_get_subscription", async () => {
    const answer = await call("billing_get_subscription", { token: user.token, expect: [200] });
    if (target.stateful) expect(answer.json).toMatchObject({ plan: "plus", status: "active", interval: "month" });
  });

  op("billing_change_plan", async () => {
    const answer = await call("billing_change_plan", { token: user.token, json: { plan: "pro" }, expect: [200] });
    if (target.stateful) expect(answer.json).toMatchObject({ plan: "pro", previous_plan: "plus", scheduled_change_at: null });
  });

  op("billing_invoices", async () => {
    const answer = await call("billing_invoices", { token: user.token, query: { limit: 10 }, expect: [200] });
    if (target.stateful) expect((answer.json as { total: number }).total).toBe(2);
  });

  op("billing_portal", async () => {
    await call("billing_portal", { token: user.token, expect: [200] });
  });

  op("billing_cancel", async () => {
    const answer = await call("billing_cancel", { token: user.token, expect: [200] });
    if (target.stateful) expect(answer.json).toMatchObject({ plan: "pro", status: "active" });
  });

  op("billing_provider_webhook", async () => {
    // Only the payment provider can sign its events, so a server refuses this one (400); the
    // contract judges the answer either way.
    const json = { id: "evt_conformance", type: "checkout.session.completed", data: { object: { id: "cs_conformance", mode: "subscription" } } };
    await call("billing_provider_webhook", { json, headers: { "stripe-signature": "t=0,v1=00" }, expect: [400] });
  });
});
