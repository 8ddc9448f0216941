import type { Command } from "commander";
import { contextOf } from "../context.ts";
import { examples } from "../help.ts";
import { withServerServices } from "../internals/database.ts";
import { printTable } from "../output.ts";
import { positiveInt } from "../parse.ts";

/** The audit log of trust and safety (issue 41): who did what, when and why, newest first. */
export function registerAuditCommand(program: Command): void {
  program
    .command("audit")
    .description("The trust and safety audit log, newest first (on the server's database)")
    .option("--user <id>", "only actions concerning this account (its id)")
    .option("--target <id>", "only actions on this target (persona, listing, review, message or account id)")
    .option("--limit <n>", "most entries to list", positiveInt, 50)
    .addHelpText("after", examples(["persona audit", "persona audit --user 0193a6c0-… --json"]))
    .action(async (options: { user?: string; target?: string; limit: number }, command: Command) => {
      const { out } = await contextOf(command);
      const { auditLog } = await import("../../server/areas/safety/index.ts");
      const entries = await withServerServices((services) =>
        auditLog(services, { limit: options.limit, ...(options.user ? { subjectUserId: options.user } : {}), ...(options.target ? { targetId: options.target } : {}) }),
      );
      const data = entries.map((entry) => ({ ...entry, at: entry.at instanceof Date ? entry.at.toISOString() : entry.at }));
      out.result({ data }, () =>
        printTable(
          data,
          [
            { header: "at", value: (e) => e.at },
            { header: "who", value: (e) => e.actor, max: 24 },
            { header: "action", value: (e) => e.action },
            { header: "target", value: (e) => `${e.target_type} ${e.target_id ?? "-"}` },
            { header: "why", value: (e) => e.reason, max: 60 },
          ],
          "(no entries)",
        ),
      );
    });
}
