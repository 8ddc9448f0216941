import type { Command } from "commander";
import { contextOf } from "../context.ts";
import { usageError } from "../errors.ts";
import { examples } from "../help.ts";
import { withServerServices } from "../internals/database.ts";
import { printTable } from "../output.ts";
import { positiveInt } from "../parse.ts";

const areaOfConversations = () => import("../../server/areas/conversations/index.ts");

/** A UTC day (`YYYY-MM-DD`) as the start of that day. */
function day(raw: string, option: string): Date {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(raw) || Number.isNaN(Date.parse(`${raw}T00:00:00Z`))) throw usageError(`${option} must be a date, YYYY-MM-DD`);
  return new Date(`${raw}T00:00:00Z`);
}

const usd = (nanos: number) => `${(nanos / 1e9).toFixed(6)}`;

/**
 * What the stored replies cost, per user or per persona, over a period (issue 40): the operator's
 * view of the registry's prices at work, on the server's database. Replies on users' own keys are
 * counted apart and cost the server nothing.
 */
export function registerCostCommands(program: Command): void {
  program
    .command("costs")
    .description("What replies cost per user or per persona over a period, at the model registry's prices (on the server's database)")
    .option("--by <what>", "user | persona", "user")
    .option("--from <date>", "first UTC day, YYYY-MM-DD (default: the first of this month)")
    .option("--to <date>", "last UTC day, YYYY-MM-DD (default: today)")
    .option("--limit <n>", "most lines, the costliest first", positiveInt, 50)
    .addHelpText("after", examples(["persona costs", "persona costs --by persona --from 2026-11-01 --to 2026-11-30", "persona costs --json | jq '.data[0]'"]))
    .action(async (options: { by: string; from?: string; to?: string; limit: number }, command: Command) => {
      const { out } = await contextOf(command);
      if (options.by !== "user" && options.by !== "persona") throw usageError("--by must be user or persona");
      const now = new Date();
      const from = options.from ? day(options.from, "--from") : new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
      const to = new Date((options.to ? day(options.to, "--to") : day(now.toISOString().slice(0, 10), "--to")).getTime() + 86_400_000);
      if (to <= from) throw usageError("--to must not be before --from");
      const { costReport } = await areaOfConversations();
      const lines = await withServerServices((services) => costReport(services, options.by as "user" | "persona", { from, to, limit: options.limit }));
      const data = lines.map((line) => ({
        [options.by === "user" ? "user_id" : "persona_id"]: line.id,
        ...(options.by === "persona" ? { name: line.name } : {}),
        replies: line.replies,
        own_key_replies: line.ownKeyReplies,
        input_tokens: line.inputTokens,
        output_tokens: line.outputTokens,
        cost_usd: line.costNanos / 1e9,
      }));
      out.result({ from: from.toISOString(), to: to.toISOString(), data }, () =>
        printTable(lines, [
          { header: options.by === "user" ? "USER" : "PERSONA", value: (line) => line.id },
          ...(options.by === "persona" ? [{ header: "NAME", value: (line: (typeof lines)[number]) => line.name ?? "", max: 30 }] : []),
          { header: "REPLIES", value: (line) => String(line.replies) },
          { header: "OWN KEY", value: (line) => String(line.ownKeyReplies) },
          { header: "INPUT", value: (line) => String(line.inputTokens) },
          { header: "OUTPUT", value: (line) => String(line.outputTokens) },
          { header: "USD", value: (line) => usd(line.costNanos) },
        ]),
      );
    });
}
