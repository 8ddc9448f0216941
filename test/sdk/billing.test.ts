// The SDK's billing helpers against the real service on the offline payments provider.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ConflictError, createClient, NotFoundError } from "../../sdk/src/index.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ env: { AUTO_AVATARS: "false" } });
});
afterAll(async () => {
  await service?.close();
});

describe("client.billing", () => {
  test("checkout, subscription, plan change, invoices, usage, portal and cancel", { timeout: 120_000 }, async () => {
    const user = await registerUser(service);
    const client = createClient({ baseUrl: service.url, accessToken: user.accessToken, refreshToken: user.refreshToken });
    await expect(client.billing.subscription()).rejects.toBeInstanceOf(NotFoundError);
    expect((await client.billing.usage()).plan).toBe("free");

    const back = { success_url: "https://app.example.com/ok", cancel_url: "https://app.example.com/back" };
    const { checkout_url } = await client.billing.checkout({ plan: "plus", interval: "month", ...back });
    // The buyer's part, as a browser would do it on the local checkout page.
    const token = /name="csrf_token" value="([^"]+)"/.exec(await (await fetch(checkout_url)).text())![1]!;
    const paid = await fetch(checkout_url, { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ action: "pay", csrf_token: token }) });
    expect(paid.status).toBe(303);

    expect(await client.billing.subscription()).toMatchObject({ plan: "plus", status: "active" });
    await expect(client.billing.checkout({ plan: "pro", interval: "month", ...back })).rejects.toBeInstanceOf(ConflictError);
    const change = await client.billing.changePlan("pro");
    expect(change).toMatchObject({ plan: "pro", previous_plan: "plus", proration_currency: "usd" });
    const numbers: string[] = [];
    for await (const invoice of client.billing.invoices({ limit: 1 })) numbers.push(invoice.number);
    expect(numbers).toHaveLength(change.proration_amount > 0 ? 2 : 1);
    expect((await client.billing.usage()).usage.personas_limit).toBe(50);
    expect((await client.billing.portal()).portal_url).toBe(service.url);

    // A downgrade waits for the period end and the subscription says so; asking for the current plan drops it.
    expect(await client.billing.subscription()).toMatchObject({ plan: "pro", pending_plan: null, pending_change_at: null });
    const downgrade = await client.billing.changePlan("plus");
    expect(downgrade).toMatchObject({ plan: "plus", previous_plan: "pro", scheduled_change_at: change.current_period_end });
    expect(await client.billing.subscription()).toMatchObject({ plan: "pro", pending_plan: "plus", pending_change_at: change.current_period_end });
    await client.billing.changePlan("pro");
    expect(await client.billing.subscription()).toMatchObject({ plan: "pro", pending_plan: null, pending_change_at: null });

    // A cancellation replaces a pending downgrade.
    await client.billing.changePlan("plus");
    expect(await client.billing.cancel()).toMatchObject({ plan: "pro", cancel_at: change.current_period_end });
    expect(await client.billing.subscription()).toMatchObject({ plan: "pro", cancel_at: change.current_period_end, pending_plan: null, pending_change_at: null });
  });
});
