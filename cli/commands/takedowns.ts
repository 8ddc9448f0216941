import type { Command } from "commander";
import { contextOf } from "../context.ts";
import { examples } from "../help.ts";
import { withServerServices } from "../internals/database.ts";
import { operatorOf, operatorOption, reasonOption } from "../operator-options.ts";
import { printFields, printTable } from "../output.ts";
import { positiveInt } from "../parse.ts";

const areaOfSafety = () => import("../../server/areas/safety/index.ts");

const iso = (value: unknown) => (value instanceof Date ? value.toISOString() : value);

/** Takedowns and holds with their appeals (issue 41), on the server's database. */
export function registerTakedownCommands(program: Command): void {
  const group = program
    .command("takedowns")
    .description("Appeals of takedowns and holds, and their revert (on the server's database)")
    .addHelpText("after", examples(["persona takedowns list", "persona takedowns revert 0193a9b2-… --reason 'The appeal is right'", "persona takedowns uphold 0193a9b2-… --reason 'Still harassing'"]));

  group
    .command("list", { isDefault: true })
    .description("Takedowns and holds with an appeal waiting, the oldest first (the default subcommand)")
    .option("--limit <n>", "most to list", positiveInt, 50)
    .action(async (options: { limit: number }, command: Command) => {
      const { out } = await contextOf(command);
      const { appealsWaiting } = await areaOfSafety();
      const waiting = await withServerServices((services) => appealsWaiting(services, options.limit));
      const data = waiting.map((action) => ({ ...action, created_at: iso(action.created_at), appealed_at: iso(action.appealed_at) }));
      out.result({ data }, () =>
        printTable(
          data,
          [
            { header: "id", value: (a) => a.id },
            { header: "kind", value: (a) => a.kind },
            { header: "target", value: (a) => `${a.target_type} ${a.target_id}` },
            { header: "appealed", value: (a) => a.appealed_at },
            { header: "appeal", value: (a) => a.appeal_message, max: 60 },
          ],
          "(no appeals waiting)",
        ),
      );
    });

  const decide = (name: "revert" | "uphold", description: string) =>
    group
      .command(name)
      .description(description)
      .argument("<takedown>", "the takedown's (or hold's) id")
      .addOption(reasonOption())
      .addOption(operatorOption())
      .action(async (id: string, options: { reason: string; as?: string }, command: Command) => {
        const { out } = await contextOf(command);
        const { revertTakedown, upholdTakedown } = await areaOfSafety();
        const action = await withServerServices((services) => (name === "revert" ? revertTakedown : upholdTakedown)(services, id, operatorOf(options)));
        out.result(action, () => printFields([["id", action.id], ["kind", action.kind], ["target", `${action.target_type} ${action.target_id}`], ["reverted", iso(action.reverted_at)], ["appeal", action.appeal_outcome ?? (action.appealed_at ? "granted" : "-")]]));
      });
  decide("revert", "Put the content back in every public place (granting its appeal, if any)");
  decide("uphold", "Keep the content down and close its appeal");
}
