import type { Command } from "commander";
import { contextOf } from "../context.ts";
import { enumOption } from "../contract-enums.ts";
import { usageError } from "../errors.ts";
import { examples } from "../help.ts";
import { printFields } from "../output.ts";
import { exportCard, type CardExportOptions } from "./cards.ts";

/**
 * `persona export`: with no argument, a data export of the caller's account (built by a job, the
 * download link arrives by e-mail); with a persona, that persona as a character card.
 */
export function registerExportCommand(program: Command): void {
  program
    .command("export")
    .description("Without a persona: request an export of all your data (the signed link is e-mailed). With one: write it as a character card")
    .argument("[persona]", "id or name of a persona to export as a character card")
    .option("-o, --output <file>", "write the card to this file (a .png name means a PNG card); JSON to stdout without it")
    .addOption(enumOption("--format <format>", "card format (default: png for a .png file, else json)", "CardFormat"))
    .addHelpText(
      "after",
      "\nWithout <persona> this is the account data export, as before: while an export is processing,\n" +
        "asking again answers that same export. Without SMTP on the server, read the link with\n" +
        "`persona mail --kind data_export` (server's database). -o and --format apply to cards only.\n" +
        "With <persona> (yours, or a public one: then only its public fields) it writes a Character Card V3.\n" +
        examples(["persona export", "persona export --json | jq -r .export_id", "persona export Orion -o orion.png", "persona export Orion > orion.json"]),
    )
    .action(async (ref: string | undefined, options: CardExportOptions, command: Command) => {
      const ctx = await contextOf(command);
      if (ref !== undefined) return exportCard(ctx, ref, options);
      if (options.output || options.format) throw usageError("-o and --format are for a persona's card: give the persona (see --help)");
      const answer = await ctx.client().auth.exportData();
      ctx.out.result(answer, () => {
        printFields([
          ["export_id", answer.export_id],
          ["status", answer.status],
          ["requested_at", answer.requested_at],
        ]);
        ctx.out.line(answer.message);
      });
    });
}
