import type { Command } from "commander";
import { contextOf } from "../context.ts";
import { examples } from "../help.ts";
import { withServerServices } from "../internals/database.ts";
import { operatorOf, operatorOption, reasonOption } from "../operator-options.ts";
import { printFields } from "../output.ts";

const areaOfSafety = () => import("../../server/areas/safety/index.ts");

/**
 * `persona users suspend|unsuspend` (issue 41), added to the `users` group (commands/users.ts):
 * a suspended account cannot sign in or use its keys and its public content is hidden; it keeps
 * its data export, and a suspension is reversible, unlike a deletion.
 */
export function registerSuspensionCommands(program: Command): void {
  const users = program.commands.find((command) => command.name() === "users");
  if (!users) throw new Error("the users command group must be registered before the suspension commands");
  users.addHelpText("after", examples(["persona users suspend mara_l --reason 'Repeated harassment'", "persona users unsuspend mara_l --reason 'Appeal granted'"]));

  users
    .command("suspend")
    .description("Suspend an account: no sign-in, no keys, public content hidden (its data export stays)")
    .argument("<user>", "the account's id, e-mail or username")
    .addOption(reasonOption())
    .addOption(operatorOption())
    .action(async (who: string, options: { reason: string; as?: string }, command: Command) => {
      const { out } = await contextOf(command);
      const { suspendUser } = await areaOfSafety();
      const action = await withServerServices((services) => suspendUser(services, who, operatorOf(options)));
      out.result(action, () => printFields([["suspended", action.target_id], ["reason", action.reason], ["action", action.id]]));
    });

  users
    .command("unsuspend")
    .description("Lift an account's suspension: it signs in again and its public content is back")
    .argument("<user>", "the account's id, e-mail or username")
    .addOption(reasonOption())
    .addOption(operatorOption())
    .action(async (who: string, options: { reason: string; as?: string }, command: Command) => {
      const { out } = await contextOf(command);
      const { unsuspendUser } = await areaOfSafety();
      const outcome = await withServerServices((services) => unsuspendUser(services, who, operatorOf(options)));
      out.result(outcome, () => printFields([["unsuspended", outcome.userId]]));
    });
}
