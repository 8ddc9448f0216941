import type { Command } from "commander";
import type { Schemas } from "../../sdk/src/index.ts";
import { contextOf } from "../context.ts";
import { enumOption } from "../contract-enums.ts";
import { CliError, EXIT, usageError } from "../errors.ts";
import { examples } from "../help.ts";
import { withServerServices } from "../internals/database.ts";
import { printFields, printPageFooter, printTable } from "../output.ts";
import { nonNegativeInt, positiveInt } from "../parse.ts";
import { isUuid } from "../resolve.ts";

const listingColumns = [
  { header: "id", value: (l: Schemas["Listing"]) => l.id },
  { header: "name", value: (l: Schemas["Listing"]) => l.name, max: 30 },
  { header: "category", value: (l: Schemas["Listing"]) => l.category },
  { header: "rating", value: (l: Schemas["Listing"]) => `${l.rating} (${l.review_count})` },
  { header: "uses", value: (l: Schemas["Listing"]) => l.use_count },
  { header: "by", value: (l: Schemas["Listing"]) => l.author.display_name, max: 20 },
];

function listingId(raw: string): string {
  if (!isUuid(raw)) throw usageError(`"${raw}" is not a listing id`);
  return raw;
}

export function registerMarketplaceCommands(program: Command): void {
  const group = program
    .command("marketplace")
    .description("Browse the marketplace, rate listings and copy personas; curate the featured shelf")
    .addHelpText("after", examples(["persona marketplace list --category roleplay --sort top_rated", "persona marketplace use 0193a6d2-…", "persona marketplace feature 0193a6d2-… --reason 'Staff pick'"]));

  group
    .command("list", { isDefault: true })
    .description("Published listings (the default subcommand)")
    .option("--q <text>", "free text over name, description and tags")
    .addOption(enumOption("--category <shelf>", "only this shelf (persona marketplace categories lists them)", "MarketplaceCategory"))
    .addOption(enumOption("--sort <order>", "order", "MarketplaceSort").default("popular"))
    .option("--limit <n>", "page size (1-100)", positiveInt, 20)
    .option("--offset <n>", "skip this many", nonNegativeInt, 0)
    .action(async (options: { q?: string; category?: Schemas["MarketplaceCategory"]; sort: "popular"; limit: number; offset: number }, command: Command) => {
      const ctx = await contextOf(command);
      const page = await ctx.client().marketplace.list({ q: options.q, category: options.category, sort: options.sort, limit: options.limit, offset: options.offset });
      ctx.out.result(page, () => {
        printTable(page.data, listingColumns, "(no listings)");
        printPageFooter(page.data.length, page.total, page.offset);
      });
    });

  group
    .command("show")
    .description("One listing with its rating distribution and sample messages")
    .argument("<listing>", "listing id")
    .action(async (id: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const { data } = await ctx.client().marketplace.get(listingId(id));
      ctx.out.result(data, () => {
        printFields([
          ["name", data.name],
          ["tagline", data.tagline],
          ["category", data.category],
          ["tags", data.tags.join(", ")],
          ["author", data.author.display_name],
          ["rating", `${data.rating} from ${data.review_count} ratings`],
          ["distribution", [5, 4, 3, 2, 1].map((n) => `${n}★ ${data.rating_distribution[String(n) as "5"]}`).join("  ")],
          ["uses", data.use_count],
        ]);
        for (const sample of data.sample_messages) ctx.out.line(`  “${sample}”`);
      });
    });

  group
    .command("categories")
    .description("Every category with its number of listings")
    .action(async (_options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const result = await ctx.client().marketplace.categories();
      ctx.out.result(result, () => printTable(result.data, [{ header: "slug", value: (c) => c.slug }, { header: "listings", value: (c) => c.count }, { header: "name", value: (c) => c.name }]));
    });

  group
    .command("featured")
    .description("The featured shelf")
    .action(async (_options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const result = await ctx.client().marketplace.featured();
      ctx.out.result(result, () => printTable(result.data, [{ header: "id", value: (l) => l.id }, { header: "name", value: (l) => l.name, max: 30 }, { header: "why", value: (l) => l.featured_reason, max: 40 }], "(nothing featured)"));
    });

  group
    .command("rate")
    .description("Rate a listing 1-5, optionally with a review (again replaces your rating)")
    .argument("<listing>", "listing id")
    .argument("<rating>", "1 to 5", positiveInt)
    .option("--review <text>", "review text (up to 2,000 characters)")
    .action(async (id: string, rating: number, options: { review?: string }, command: Command) => {
      const ctx = await contextOf(command);
      const { data } = await ctx.client().marketplace.rate(listingId(id), { rating, ...(options.review === undefined ? {} : { review: options.review }) });
      ctx.out.result(data, () => ctx.out.line(`Rated ${data.rating}.`));
    });

  group
    .command("reviews")
    .description("A listing's reviews")
    .argument("<listing>", "listing id")
    .addOption(enumOption("--sort <order>", "order", "ReviewSort").default("recent"))
    .option("--limit <n>", "page size (1-50)", positiveInt, 20)
    .option("--offset <n>", "skip this many", nonNegativeInt, 0)
    .action(async (id: string, options: { sort: "recent"; limit: number; offset: number }, command: Command) => {
      const ctx = await contextOf(command);
      const page = await ctx.client().marketplace.reviews(listingId(id), { sort: options.sort, limit: options.limit, offset: options.offset });
      ctx.out.result(page, () => {
        printTable(page.data, [{ header: "rating", value: (r) => r.rating }, { header: "by", value: (r) => r.user.display_name, max: 20 }, { header: "review", value: (r) => r.review ?? "", max: 60 }], "(no reviews)");
        printPageFooter(page.data.length, page.total, page.offset);
      });
    });

  group
    .command("use")
    .description("Copy a listing's persona into your private personas")
    .argument("<listing>", "listing id")
    .action(async (id: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const { data } = await ctx.client().marketplace.use(listingId(id));
      ctx.out.result(data, () => ctx.out.line(`${data.message} (persona ${data.persona_id})`));
    });

  group
    .command("feature")
    .description("Put a listing on the featured shelf (on the server's database)")
    .argument("<listing>", "listing id")
    .requiredOption("--reason <text>", "why it is featured, shown to users")
    .action(async (id: string, options: { reason: string }, command: Command) => {
      const { out } = await contextOf(command);
      const listing = listingId(id);
      const { feature } = await import("../../server/areas/marketplace/index.ts");
      const done = await withServerServices((services) => feature(services, listing, options.reason));
      if (!done) throw new CliError(`listing ${id} not found`, EXIT.notFound, "not_found");
      out.result({ id, featured: true, featured_reason: options.reason }, () => out.line(`Featured ${id}.`));
    });

  group
    .command("unfeature")
    .description("Take a listing off the featured shelf (on the server's database)")
    .argument("<listing>", "listing id")
    .action(async (id: string, _options: unknown, command: Command) => {
      const { out } = await contextOf(command);
      const listing = listingId(id);
      const { unfeature } = await import("../../server/areas/marketplace/index.ts");
      const done = await withServerServices((services) => unfeature(services, listing));
      if (!done) throw new CliError(`listing ${id} not found`, EXIT.notFound, "not_found");
      out.result({ id, featured: false }, () => out.line(`Unfeatured ${id}.`));
    });
}
