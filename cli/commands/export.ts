import type { Command } from "commander";
import { contextOf } from "../context.ts";
import { examples } from "../help.ts";
import { printFields } from "../output.ts";

/** A data export of the caller's account: built by a job, the download link arrives by e-mail. */
export function registerExportCommand(program: Command): void {
  program
    .command("export")
    .description("Request an export of all your data; the signed download link is e-mailed")
    .addHelpText(
      "after",
      "\nWhile an export is processing, asking again answers that same export.\n" +
        "Without SMTP on the server, read the link with `persona mail --kind data_export` (server's database).\n" +
        examples(["persona export", "persona export --json | jq -r .export_id"]),
    )
    .action(async (_options: unknown, command: Command) => {
      const ctx = await contextOf(command);
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
