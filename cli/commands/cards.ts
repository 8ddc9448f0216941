import { writeFile } from "node:fs/promises";
import type { Command } from "commander";
import { contextOf, type Context } from "../context.ts";
import { usageError } from "../errors.ts";
import { examples } from "../help.ts";
import { printFields, printJson } from "../output.ts";
import { resolvePersonaId } from "../resolve.ts";

/** `persona import <card>`: a persona from a Character Card V2/V3 file (JSON or PNG). */
export function registerImportCommand(program: Command): void {
  program
    .command("import")
    .description("Create a persona from a character card (V2 or V3; a .json file or a .png card)")
    .argument("<card>", "path of the card file")
    .addHelpText(
      "after",
      "\nThe file's content decides whether it is JSON or PNG; a PNG card becomes the persona's avatar.\n" +
        "The persona is private; the field mapping is in docs/design/cards.md.\n" +
        examples(["persona import nova.png", "persona import nova.json --json | jq -r .id"]),
    )
    .action(async (path: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const persona = await ctx.client().personas.importCard(path);
      ctx.out.result(persona, () =>
        printFields([
          ["id", persona.id],
          ["name", persona.name],
          ["description", persona.description],
          ["greeting", persona.greeting_message ?? "(being generated)"],
          ["avatar_url", persona.avatar_url ?? "(being generated)"],
        ]),
      );
    });
}

export interface CardExportOptions {
  output?: string;
  format?: "json" | "png";
}

/** The card format: the one asked for, else PNG for an output file named .png, else JSON. */
function formatOf(options: CardExportOptions): "json" | "png" {
  if (options.format) return options.format;
  return options.output?.toLowerCase().endsWith(".png") ? "png" : "json";
}

/** `persona export <persona>`: the persona as a card, to a file (`-o`) or, as JSON, to stdout. */
export async function exportCard(ctx: Context, ref: string, options: CardExportOptions): Promise<void> {
  const client = ctx.client();
  const id = await resolvePersonaId(client, ref);
  const format = formatOf(options);
  if (format === "png" && !options.output) throw usageError("a PNG card needs a file: give -o <file.png>");
  const bytes = format === "png" ? await client.personas.exportCardPng(id) : undefined;
  const card = bytes ? undefined : await client.personas.exportCard(id);
  if (!options.output) return printJson(card);
  await writeFile(options.output, bytes ?? `${JSON.stringify(card, null, 2)}\n`);
  const written = { persona_id: id, format, file: options.output };
  ctx.out.result(written, () => ctx.out.line(`Wrote the ${format.toUpperCase()} card of ${id} to ${options.output}.`));
}
