import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import type { Schemas } from "../../sdk/src/index.ts";
import { contextOf } from "../context.ts";
import { enumOption } from "../contract-enums.ts";
import { usageError } from "../errors.ts";
import { examples } from "../help.ts";
import { printFields, printPageFooter, printTable, type Column } from "../output.ts";
import { nonNegativeInt, positiveInt } from "../parse.ts";
import { resolvePersonaId } from "../resolve.ts";

interface FieldOptions {
  name?: string;
  instructions?: string;
  instructionsFile?: string;
  description?: string;
  model?: string;
  avatarUrl?: string;
  public?: boolean;
  category?: Schemas["PersonaCategory"];
  greeting?: string;
  voice?: Schemas["VoiceId"];
  handle?: string;
  modelSettings?: string;
}

/** The options create and update share; update sends only the ones given. */
function withFieldOptions(command: Command): Command {
  return command
    .option("--name <name>", "display name")
    .option("--instructions <text>", "system prompt (Markdown)")
    .option("--instructions-file <path>", "read the system prompt from a file")
    .option("--description <text>", "public description")
    .option("--model <model>", "model id (one of the server's configured models)")
    .option("--avatar-url <url>", "https URL of a square image")
    .option("--public", "list it in explore")
    .option("--no-public", "keep it private")
    .addOption(enumOption("--category <category>", "category", "PersonaCategory"))
    .option("--greeting <text>", "first assistant turn of new conversations")
    .addOption(enumOption("--voice <voice>", "voice for text-to-speech", "VoiceId"))
    .option("--handle <handle>", "readable id, unique among your personas: what OpenAI-compatible clients send as model")
    .option(
      "--model-settings <json>",
      'sampling defaults and what OpenAI-compatible clients may set, as JSON: \'{"temperature":0.7,"stop":["END"],"client_may_set":["temperature"]}\' (replaces the whole object)',
    );
}

async function fieldsOf(options: FieldOptions): Promise<Schemas["PersonaUpdate"]> {
  if (options.instructions !== undefined && options.instructionsFile) throw usageError("give --instructions or --instructions-file, not both");
  const instructions = options.instructionsFile ? await readFile(options.instructionsFile, "utf8") : options.instructions;
  const fields: Schemas["PersonaUpdate"] = {
    handle: options.handle,
    model_settings: options.modelSettings === undefined ? undefined : modelSettingsOf(options.modelSettings),
    name: options.name,
    instructions,
    description: options.description,
    model: options.model,
    avatar_url: options.avatarUrl,
    is_public: options.public,
    category: options.category,
    greeting_message: options.greeting,
    voice_id: options.voice,
  };
  // Absent options must not be sent: an update changes exactly the fields given.
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as Schemas["PersonaUpdate"];
}

function modelSettingsOf(json: string): Schemas["PersonaModelSettings"] {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw usageError("--model-settings must be a JSON object");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw usageError("--model-settings must be a JSON object");
  // The server validates the fields; a bad one comes back as a 400 naming it.
  return value as Schemas["PersonaModelSettings"];
}

const summaryColumns: Column<Schemas["PersonaSummary"]>[] = [
  { header: "id", value: (p) => p.id },
  { header: "name", value: (p) => p.name, max: 30 },
  { header: "category", value: (p) => p.category },
  { header: "public", value: (p) => (p.is_public ? "yes" : "no") },
  { header: "messages", value: (p) => p.message_count },
  { header: "model", value: (p) => p.model },
  { header: "description", value: (p) => p.description, max: 50 },
];

function printPersona(p: Schemas["Persona"]): void {
  printFields([
    ["id", p.id],
    ["name", p.name],
    ["handle", p.handle],
    ["description", p.description],
    ["category", p.category],
    ["public", p.is_public ? "yes" : "no"],
    ["model", p.model],
    ["voice", p.voice_id],
    ["model_settings", JSON.stringify(p.model_settings)],
    ["messages", p.message_count],
    ["greeting", p.greeting_message ?? "(being generated)"],
    ["avatar_url", p.avatar_url ?? "(being generated)"],
    ["creator_id", p.creator_id],
    ["created_at", p.created_at],
    ["updated_at", p.updated_at],
  ]);
  if (p.instructions) {
    process.stdout.write(`\ninstructions:\n${p.instructions.replace(/^/gm, "  ")}\n`);
  }
}

export function registerPersonaCommands(program: Command): void {
  const group = program
    .command("personas")
    .description("Create, read, update and delete your personas; explore public ones")
    .addHelpText(
      "after",
      "\nA <persona> is an id, or the exact name of one of your personas.\n" +
        examples([
          "persona personas list",
          "persona personas create --name Orion --instructions-file orion.md --category tutor --public",
          "persona personas update Orion --description 'Night-sky guide' --no-public",
          "persona personas explore --q stars --sort trending --json",
        ]),
    );

  group
    .command("list")
    .description("List your personas")
    .option("--limit <n>", "page size", positiveInt, 20)
    .option("--offset <n>", "skip this many", nonNegativeInt, 0)
    .addOption(enumOption("--sort <field>", "order", "PersonaSort"))
    .addHelpText("after", examples(["persona personas list --sort name", "persona personas list --json | jq -r '.data[].id'"]))
    .action(async (options: { limit: number; offset: number; sort?: Schemas["PersonaSort"] }, command: Command) => {
      const ctx = await contextOf(command);
      const page = await ctx.client().personas.list({ limit: options.limit, offset: options.offset, ...(options.sort ? { sort: options.sort } : {}) });
      ctx.out.result(page, () => {
        printTable(page.data, summaryColumns, "(no personas yet: create one with `persona personas create`)");
        printPageFooter(page.data.length, page.total, page.offset);
      });
    });

  group
    .command("explore")
    .description("Browse public personas")
    .option("--q <text>", "search text")
    .addOption(enumOption("--category <category>", "only this category", "PersonaCategory"))
    .addOption(enumOption("--sort <order>", "order", "ExploreSort"))
    .option("--limit <n>", "page size", positiveInt, 20)
    .option("--offset <n>", "skip this many", nonNegativeInt, 0)
    .addHelpText("after", examples(["persona personas explore --category tutor --sort popular"]))
    .action(
      async (
        options: { q?: string; category?: Schemas["PersonaCategory"]; sort?: Schemas["ExploreSort"]; limit: number; offset: number },
        command: Command,
      ) => {
        const ctx = await contextOf(command);
        const query = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
        const page = await ctx.client().personas.explore(query);
        ctx.out.result(page, () => {
          printTable(page.data, [...summaryColumns.slice(0, 2), { header: "creator", value: (p) => p.creator_id }, ...summaryColumns.slice(2)]);
          printPageFooter(page.data.length, page.total, page.offset);
        });
      },
    );

  group
    .command("get")
    .description("Show one persona")
    .argument("<persona>", "id or name")
    .addHelpText("after", examples(["persona personas get Orion", "persona personas get 0193a6c4-… --json"]))
    .action(async (ref: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const persona = await client.personas.get(await resolvePersonaId(client, ref));
      ctx.out.result(persona, () => printPersona(persona));
    });

  withFieldOptions(group.command("create").description("Create a persona (--name and instructions required)"))
    .addHelpText("after", examples(["persona personas create --name Orion --instructions 'You are a stargazing guide.' --json"]))
    .action(async (options: FieldOptions, command: Command) => {
      const ctx = await contextOf(command);
      const fields = await fieldsOf(options);
      if (!fields.name) throw usageError("--name is required");
      if (fields.instructions === undefined) throw usageError("--instructions or --instructions-file is required");
      const persona = await ctx.client().personas.create(fields as Schemas["PersonaCreate"]);
      ctx.out.result(persona, () => printPersona(persona));
    });

  withFieldOptions(group.command("update").description("Change a persona; only the options given change").argument("<persona>", "id or name"))
    .addHelpText("after", examples(["persona personas update Orion --public --category tutor"]))
    .action(async (ref: string, options: FieldOptions, command: Command) => {
      const ctx = await contextOf(command);
      const fields = await fieldsOf(options);
      if (Object.keys(fields).length === 0) throw usageError("nothing to change: give at least one option (see --help)");
      const client = ctx.client();
      const persona = await client.personas.update(await resolvePersonaId(client, ref), fields);
      ctx.out.result(persona, () => printPersona(persona));
    });

  group
    .command("delete")
    .description("Delete a persona with its conversations and knowledge")
    .argument("<persona>", "id or name")
    .addHelpText("after", examples(["persona personas delete 0193a6c4-…"]))
    .action(async (ref: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const deleted = await client.personas.delete(await resolvePersonaId(client, ref));
      ctx.out.result(deleted, () => ctx.out.line(`Deleted persona ${deleted.id}.`));
    });
}
