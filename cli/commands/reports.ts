import type { Command } from "commander";
import { contextOf } from "../context.ts";
import { usageError } from "../errors.ts";
import { examples } from "../help.ts";
import { withServerServices } from "../internals/database.ts";
import { operatorOf, operatorOption, reasonOption } from "../operator-options.ts";
import { printFields, printTable } from "../output.ts";
import { positiveInt } from "../parse.ts";

const areaOfSafety = () => import("../../server/areas/safety/index.ts");

const TARGET_TYPES = ["persona", "listing", "review", "profile", "room_message", "conversation_message"];
const DECISIONS = ["dismiss", "takedown", "warn", "suspend"] as const;

const iso = (value: unknown) => (value instanceof Date ? value.toISOString() : value);

/**
 * The review queue of trust and safety (issue 41), on the server's database: open reports by
 * target, one report with its snapshot and the target as it is now, and the operator's decision.
 */
export function registerReportCommands(program: Command): void {
  const group = program
    .command("reports")
    .description("Review users' reports: the queue, one report, and its resolution (on the server's database)")
    .addHelpText(
      "after",
      "\nResolving a report resolves every open report of its target. Decisions: dismiss (a hold of the\n" +
        "moderation provider is released), takedown (gone from every public place; its owner keeps it and\n" +
        "may appeal once), warn (its owner), suspend (its owner's account). Every action is in `persona audit`.\n" +
        examples(["persona reports list", "persona reports show 0193a9a1-…", "persona reports resolve 0193a9a1-… takedown --reason 'Harassment in the greeting'"]),
    );

  group
    .command("list", { isDefault: true })
    .description("Open reports by target, the most reported first (the default subcommand)")
    .option("--type <target>", `only targets of this type (${TARGET_TYPES.join(", ")})`)
    .option("--limit <n>", "most targets to list", positiveInt, 50)
    .action(async (options: { type?: string; limit: number }, command: Command) => {
      const { out } = await contextOf(command);
      if (options.type && !TARGET_TYPES.includes(options.type)) throw usageError(`--type must be one of ${TARGET_TYPES.join(", ")}`);
      const { reviewQueue } = await areaOfSafety();
      const queue = await withServerServices((services) => reviewQueue(services, { ...(options.type ? { targetType: options.type } : {}), limit: options.limit }));
      const data = queue.map((entry) => ({ ...entry, first_at: iso(entry.first_at), last_at: iso(entry.last_at) }));
      out.result({ data }, () =>
        printTable(
          data,
          [
            { header: "report", value: (e) => e.report_id },
            { header: "type", value: (e) => e.target_type },
            { header: "target", value: (e) => e.target_id },
            { header: "reports", value: (e) => e.reports },
            { header: "reasons", value: (e) => e.reasons },
            { header: "since", value: (e) => e.first_at },
          ],
          "(no open reports)",
        ),
      );
    });

  group
    .command("show")
    .description("A report with every report of its target, its snapshot and the target as it is now")
    .argument("<report>", "report id (the queue names one per target)")
    .action(async (id: string, _options: unknown, command: Command) => {
      const { out } = await contextOf(command);
      const { reportDetail } = await areaOfSafety();
      const detail = await withServerServices((services) => reportDetail(services, id));
      out.result(detail, () => {
        printFields([
          ["report", detail.report.id],
          ["target", `${detail.report.target_type} ${detail.report.target_id}`],
          ["acts on", `${detail.target.type} ${detail.target.id}`],
          ["owner", detail.report.target_owner_id],
          ["status", detail.report.resolution ? `${detail.report.status} (${detail.report.resolution})` : detail.report.status],
          ["standing", detail.standing ? `${detail.standing.kind} ${detail.standing.id}: ${detail.standing.reason}` : "none"],
        ]);
        out.line("\nreports:");
        for (const r of detail.reports) out.line(`  ${iso(r.created_at)}  ${r.reason}${r.details ? `: ${r.details}` : ""}${r.reporter_id ? "" : " (moderation provider)"}  [${r.status}]`);
        out.line("\nsnapshot (when reported):");
        out.line(JSON.stringify(detail.report.snapshot, null, 2).replace(/^/gm, "  "));
        out.line("\nnow:");
        out.line(detail.current ? JSON.stringify(detail.current, null, 2).replace(/^/gm, "  ") : "  (gone)");
      });
    });

  group
    .command("resolve")
    .description("Decide a report, and with it every open report of its target")
    .argument("<report>", "report id")
    .argument("<decision>", DECISIONS.join(" | "))
    .addOption(reasonOption())
    .addOption(operatorOption())
    .action(async (id: string, decision: string, options: { reason: string; as?: string }, command: Command) => {
      const { out } = await contextOf(command);
      if (!(DECISIONS as readonly string[]).includes(decision)) throw usageError(`<decision> must be one of ${DECISIONS.join(", ")}`);
      const { resolveReport } = await areaOfSafety();
      const outcome = await withServerServices((services) => resolveReport(services, id, decision as (typeof DECISIONS)[number], operatorOf(options)));
      out.result(outcome, () => out.line(`Resolved ${outcome.reports.length} report(s): ${decision}${outcome.action ? ` (${outcome.action.kind} ${outcome.action.id})` : ""}.`));
    });
}
