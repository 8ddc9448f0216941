import type { Command } from "commander";
import { PLAN_LIMITS } from "../../server/quota/plans.ts";
import { contextOf } from "../context.ts";
import { contractEnum } from "../contract-enums.ts";
import { CliError, EXIT, usageError } from "../errors.ts";
import { examples } from "../help.ts";
import { withServerServices } from "../internals/database.ts";
import { printFields, printTable } from "../output.ts";
import { positiveInt } from "../parse.ts";

const areaOfAuth = () => import("../../server/areas/auth/index.ts");

/** "free 200 / 3 / 5, plus 2,000 / 10 / 25, …": each plan's limits as the server applies them. */
function planLimitsLine(plans: readonly string[]): string {
  const figure = (n: number) => n.toLocaleString("en-US");
  return plans
    .map((plan) => {
      const limits = PLAN_LIMITS[plan as keyof typeof PLAN_LIMITS];
      return limits ? `${plan} ${figure(limits.messagesPerMonth)} / ${figure(limits.personas)} / ${figure(limits.knowledgeDocs)}` : plan;
    })
    .join(", ");
}

/**
 * Accounts and their plans, on the server's database: without billing (a self-hosted server), this
 * is how an administrator lets a user past the free plan's limits.
 */
export function registerUserCommands(program: Command): void {
  const plans: string[] = contractEnum("Plan");
  const group = program
    .command("users")
    .description("List accounts and change their plan (on the server's database)")
    .addHelpText(
      "after",
      "\nPlans and their limits (messages a month / personas / knowledge documents):\n" +
        `  ${planLimitsLine(plans)}.\n` +
        "These commands work on the server's database (DATABASE_URL, or the embedded one in PERSONA_DATA_DIR);\n" +
        "on the embedded default they attach to the running server's database.\n" +
        examples(["persona users list --plan free", "persona users set-plan ada@example.com pro"]),
    );

  group
    .command("list", { isDefault: true })
    .description("List accounts, newest first (the default subcommand)")
    .option("--plan <plan>", `only accounts on this plan (${plans.join(", ")})`)
    .option("--limit <n>", "most accounts to list", positiveInt, 50)
    .action(async (options: { plan?: string; limit: number }, command: Command) => {
      const { out } = await contextOf(command);
      if (options.plan && !plans.includes(options.plan)) throw usageError(`--plan must be one of ${plans.join(", ")}`);
      const { listAccounts } = await areaOfAuth();
      const accounts = await withServerServices((services) => listAccounts(services, options));
      out.result({ data: accounts }, () =>
        printTable(accounts, [
          { header: "ID", value: (a) => a.id },
          { header: "EMAIL", value: (a) => a.email },
          { header: "USERNAME", value: (a) => a.username },
          { header: "PLAN", value: (a) => a.plan },
          { header: "CREATED", value: (a) => a.created_at },
        ]),
      );
    });

  group
    .command("set-plan")
    .description("Put an account on a plan; the new limits apply to its next request")
    .argument("<user>", "the account's id, e-mail or username")
    .argument("<plan>", plans.join(" | "))
    .addHelpText("after", examples(["persona users set-plan ada@example.com pro", "persona users set-plan mara_l creator --json"]))
    .action(async (who: string, plan: string, _options: unknown, command: Command) => {
      const { out } = await contextOf(command);
      if (!plans.includes(plan)) throw usageError(`<plan> must be one of ${plans.join(", ")}`);
      const { setAccountPlan } = await areaOfAuth();
      const account = await withServerServices((services) => setAccountPlan(services, who, plan));
      if (!account) throw new CliError(`no live account with the id, e-mail or username ${JSON.stringify(who)}`, EXIT.notFound, "not_found");
      out.result(account, () => printFields([["id", account.id], ["email", account.email], ["username", account.username], ["plan", account.plan]]));
    });
}
