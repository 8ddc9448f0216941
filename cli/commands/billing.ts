import type { Command } from "commander";
import { contextOf } from "../context.ts";
import { CliError, EXIT } from "../errors.ts";
import { examples } from "../help.ts";
import { printFields, printTable } from "../output.ts";


/**
 * Makes the Stripe Prices the service sells (one per plan and interval, found by lookup key) with
 * the server's own Stripe settings; run again, it makes nothing. Server internals load only here.
 */
async function syncPrices() {
  const [{ loadConfig }, { StripePayments }] = await Promise.all([import("../../server/toolkit/config.ts"), import("../../server/toolkit/providers/payments/stripe.ts")]);
  const config = loadConfig();
  const secretKey = config.billing.stripeSecretKey;
  if (!secretKey) throw new CliError("STRIPE_SECRET_KEY is not set: the offline payments provider needs no prices", EXIT.error, "not_configured");
  const stripe = new StripePayments({ secretKey, webhookSecret: undefined, apiUrl: config.billing.stripeApiUrl, portalReturnUrl: "" });
  try {
    return await stripe.syncPrices();
  } catch (error) {
    throw new CliError(error instanceof Error ? error.message : String(error), EXIT.error, "upstream_error");
  }
}

export function registerBillingCommands(program: Command): void {
  const group = program
    .command("billing")
    .description("Your subscription and usage; set up Stripe's prices for the server")
    .addHelpText(
      "after",
      examples(["persona billing subscription", "persona billing usage --json", "STRIPE_SECRET_KEY=sk_live_... persona billing sync-prices"]),
    );

  group
    .command("sync-prices")
    .description("Create the Stripe Prices of each plan and interval that are missing (by lookup key); safe to run again")
    .addHelpText(
      "after",
      "\nUses the server's settings: STRIPE_SECRET_KEY (and STRIPE_API_URL for a Stripe mock).\n" +
        "Lookup keys: persona_<plus|pro|creator>_<month|year>, prices as in the README's Plans table.\n" +
        examples(["STRIPE_SECRET_KEY=sk_test_... persona billing sync-prices", "persona billing sync-prices --json"]),
    )
    .action(async (_options: unknown, command: Command) => {
      const { out } = await contextOf(command);
      const prices = await syncPrices();
      out.result({ data: prices }, () => {
        printTable(prices, [
          { header: "LOOKUP KEY", value: (p) => p.lookup_key },
          { header: "PRICE", value: (p) => p.price_id },
          { header: "", value: (p) => (p.created ? "created" : "exists") },
        ]);
      });
    });

  group
    .command("subscription")
    .description("Show your subscription: plan, period, a pending downgrade or cancellation")
    .action(async (_options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const subscription = await ctx.client().billing.subscription();
      ctx.out.result(subscription, () =>
        printFields([
          ["id", subscription.id],
          ["plan", subscription.plan],
          ["interval", subscription.interval],
          ["status", subscription.status],
          ["current_period", `${subscription.current_period_start} - ${subscription.current_period_end}`],
          ["pending_change", subscription.pending_plan ? `${subscription.pending_plan} from ${subscription.pending_change_at}` : "-"],
          ["cancel_at", subscription.cancel_at ?? "-"],
          ["customer", subscription.payment_customer_id],
        ]),
      );
    });

  group
    .command("usage")
    .description("Show this period's messages, your personas and knowledge documents against your plan's limits")
    .action(async (_options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const usage = await ctx.client().billing.usage();
      ctx.out.result(usage, () => {
        printFields([
          ["plan", usage.plan],
          ["period", `${usage.period_start} - ${usage.period_end}`],
        ]);
        const { usage: u } = usage;
        printTable(
          [
            { what: "messages", used: u.messages_sent, limit: u.messages_limit },
            { what: "personas", used: u.personas_created, limit: u.personas_limit },
            { what: "knowledge documents", used: u.knowledge_docs, limit: u.knowledge_limit },
          ],
          [
            { header: "", value: (row) => row.what },
            { header: "USED", value: (row) => row.used },
            { header: "LIMIT", value: (row) => row.limit },
          ],
        );
      });
    });
}

