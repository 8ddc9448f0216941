import { InvalidArgumentError, type Command } from "commander";
import type { Schemas } from "../../sdk/src/index.ts";
import { contextOf } from "../context.ts";
import { enumOption } from "../contract-enums.ts";
import { examples } from "../help.ts";
import { printFields, printTable } from "../output.ts";
import { collect } from "../parse.ts";
import { resolvePersonaId } from "../resolve.ts";
import { registerMarketplaceCommands } from "./marketplace.ts";

function percentage(raw: string): number {
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || value > 100) throw new InvalidArgumentError("must be a number from 0 to 100");
  return value;
}

/** The creator studio and, next to it, the marketplace it publishes to. */
export function registerStudioCommands(program: Command): void {
  registerMarketplaceCommands(program);
  const group = program
    .command("studio")
    .description("Shape your personas: instruction versions, test chat, A/B variants, analytics, publishing")
    .addHelpText("after", "\nA <persona> is an id or the name of one of your personas.\n" + examples(["persona studio versions Orion", "persona studio test Orion 'Hello?' --version 0193…", "persona studio publish Orion --category roleplay --tag space"]));

  group
    .command("versions")
    .description("Every instruction version, newest first")
    .argument("<persona>", "id or name")
    .action(async (ref: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const result = await client.studio.versions(await resolvePersonaId(client, ref));
      ctx.out.result(result, () =>
        printTable(result.data, [
          { header: "version", value: (v) => v.version },
          { header: "status", value: (v) => v.status },
          { header: "id", value: (v) => v.id },
          { header: "changelog", value: (v) => v.changelog, max: 40 },
        ]),
      );
    });

  group
    .command("version")
    .description("Save new instructions as a draft version")
    .argument("<persona>", "id or name")
    .requiredOption("--instructions <text>", "the full instructions")
    .option("--changelog <text>", "what changed")
    .option("--activate", "make it live at once")
    .action(async (ref: string, options: { instructions: string; changelog?: string; activate?: boolean }, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const personaId = await resolvePersonaId(client, ref);
      let version = await client.studio.createVersion(personaId, { instructions: options.instructions, ...(options.changelog ? { changelog: options.changelog } : {}) });
      if (options.activate) version = await client.studio.activateVersion(personaId, version.id);
      ctx.out.result(version, () => ctx.out.line(`Version ${version.version} (${version.status}): ${version.id}`));
    });

  group
    .command("activate")
    .description("Make a version the live instructions")
    .argument("<persona>", "id or name")
    .argument("<version>", "version id")
    .action(async (ref: string, versionId: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const version = await client.studio.activateVersion(await resolvePersonaId(client, ref), versionId);
      ctx.out.result(version, () => ctx.out.line(`Version ${version.version} is active.`));
    });

  group
    .command("test")
    .description("One reply to a message with a version's instructions; nothing is stored")
    .argument("<persona>", "id or name")
    .argument("<message>", "the message")
    .option("--version <id>", "the version to use (default: the active one)")
    .action(async (ref: string, message: string, options: { version?: string }, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const result = await client.studio.testChat(await resolvePersonaId(client, ref), { message, ...(options.version ? { version_id: options.version } : {}) });
      ctx.out.result(result, () => {
        ctx.out.line(result.output);
        ctx.out.line(`(${result.model}, ${result.latency_ms} ms, ${result.tokens.input} + ${result.tokens.output} tokens)`);
      });
    });

  group
    .command("variants")
    .description("A/B variants with their metrics")
    .argument("<persona>", "id or name")
    .action(async (ref: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const result = await client.studio.variants(await resolvePersonaId(client, ref));
      ctx.out.result(result, () =>
        printTable(result.data, [
          { header: "id", value: (v) => v.id },
          { header: "name", value: (v) => v.name, max: 24 },
          { header: "traffic %", value: (v) => v.traffic_percentage },
          { header: "messages", value: (v) => v.metrics.message_count },
          { header: "rating", value: (v) => v.metrics.avg_rating ?? "-" },
          { header: "retention", value: (v) => v.metrics.retention_rate ?? "-" },
        ], "(no variants)"),
      );
    });

  group
    .command("variant")
    .description("Add an A/B variant, or with --id change a variant's traffic")
    .argument("<persona>", "id or name")
    .requiredOption("--traffic <percent>", "share of new conversations, 0-100", percentage)
    .option("--id <variant>", "the variant to change")
    .option("--name <name>", "name of a new variant")
    .option("--instructions <text>", "instructions of a new variant")
    .action(async (ref: string, options: { traffic: number; id?: string; name?: string; instructions?: string }, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const personaId = await resolvePersonaId(client, ref);
      const variant = options.id
        ? await client.studio.updateVariant(personaId, options.id, { traffic_percentage: options.traffic })
        : await client.studio.createVariant(personaId, { name: options.name ?? "", instructions: options.instructions ?? "", traffic_percentage: options.traffic });
      ctx.out.result(variant, () => ctx.out.line(`${variant.name}: ${variant.traffic_percentage}% (${variant.id})`));
    });

  group
    .command("analytics")
    .description("Messages, users, rating and retention over a period")
    .argument("<persona>", "id or name")
    .addOption(enumOption("--period <period>", "window", "AnalyticsPeriod").default("30d"))
    .action(async (ref: string, options: { period: "7d" | "30d" | "90d" }, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const result = await client.studio.analytics(await resolvePersonaId(client, ref), { period: options.period });
      ctx.out.result(result, () => {
        printFields([
          ["messages", result.message_count],
          ["users", result.unique_users],
          ["rating", result.avg_rating ?? "-"],
          ["retention", result.retention_rate ?? "-"],
        ]);
        printTable(result.daily_breakdown, [{ header: "date", value: (d) => d.date }, { header: "messages", value: (d) => d.messages }, { header: "users", value: (d) => d.users }]);
      });
    });

  group
    .command("publish")
    .description("List the persona in the marketplace, or update its listing")
    .argument("<persona>", "id or name")
    .addOption(enumOption("--category <shelf>", "the marketplace shelf (default: the listing keeps its shelf; a new one goes on the shelf of the persona's category)", "PublishCategory"))
    .option("--tag <tag>", "a tag (repeat, or comma-separated; up to 5)", collect)
    .addOption(enumOption("--pricing <pricing>", "free or premium", "PublishPricing").default("free"))
    .action(async (ref: string, options: { category?: Schemas["PublishCategory"]; tag?: string[]; pricing: Schemas["PublishPricing"] }, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const body = { ...(options.category ? { category: options.category } : {}), tags: options.tag ?? [], pricing: options.pricing };
      const listing = await client.studio.publish(await resolvePersonaId(client, ref), body);
      ctx.out.result(listing, () => ctx.out.line(`Published on the ${listing.category} shelf: ${listing.marketplace_url}`));
    });
}
