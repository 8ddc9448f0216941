import type { Command } from "commander";
import { contextOf } from "../context.ts";
import { usageError } from "../errors.ts";
import { examples } from "../help.ts";
import { withServerServices } from "../internals/database.ts";
import { operatorOf, operatorOption, reasonOption } from "../operator-options.ts";
import { printFields } from "../output.ts";

const RATINGS = ["general", "mature"] as const;

/** An operator's change of a persona's content rating (issue 41); its listing follows. */
export function registerRatingCommands(program: Command): void {
  const group = program.command("ratings").description("Content ratings of personas (on the server's database)");
  group
    .command("set")
    .description("Rate a persona general or mature; its marketplace listing follows")
    .argument("<persona>", "persona id")
    .argument("<rating>", RATINGS.join(" | "))
    .addOption(reasonOption())
    .addOption(operatorOption())
    .addHelpText("after", examples(["persona ratings set 0193a6c4-… mature --reason 'Adult themes in the greeting'"]))
    .action(async (id: string, rating: string, options: { reason: string; as?: string }, command: Command) => {
      const { out } = await contextOf(command);
      if (!(RATINGS as readonly string[]).includes(rating)) throw usageError(`<rating> must be one of ${RATINGS.join(", ")}`);
      const { rate } = await import("../../server/areas/safety/index.ts");
      const persona = await withServerServices((services) => rate(services, id, rating as (typeof RATINGS)[number], operatorOf(options)));
      out.result({ id: persona.id, content_rating: persona.content_rating }, () => printFields([["persona", persona.id], ["rating", persona.content_rating]]));
    });
}
