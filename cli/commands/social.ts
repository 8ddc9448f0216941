import { Option, type Command } from "commander";
import type { PersonaClient, Schemas } from "../../sdk/src/index.ts";
import { contextOf } from "../context.ts";
import { CliError, EXIT } from "../errors.ts";
import { examples } from "../help.ts";
import { printPageFooter, printTable } from "../output.ts";
import { nonNegativeInt, positiveInt } from "../parse.ts";
import { isUuid } from "../resolve.ts";

/** A user given by id or by exact username (with or without a leading @), found through search. */
export async function resolveUserId(client: PersonaClient, ref: string): Promise<string> {
  if (isUuid(ref)) return ref;
  const username = ref.replace(/^@/, "");
  const hits = await client.social.search(username, { limit: 50 });
  const found = hits.data.find((hit) => hit.username.toLowerCase() === username.toLowerCase());
  if (!found) throw new CliError(`no user is named "${username}"`, EXIT.notFound, "not_found");
  return found.id;
}

const feedColumns = [
  { header: "type", value: (item: Schemas["FeedItem"]) => (item.type === "new_persona" ? "new" : "trending") },
  { header: "when", value: (item: Schemas["FeedItem"]) => item.published_at ?? item.trending_since ?? "" },
  { header: "persona", value: (item: Schemas["FeedItem"]) => item.persona.name, max: 30 },
  { header: "creator", value: (item: Schemas["FeedItem"]) => item.creator.username },
  { header: "likes", value: (item: Schemas["FeedItem"]) => item.persona.like_count },
  { header: "id", value: (item: Schemas["FeedItem"]) => item.persona.id },
  { header: "tagline", value: (item: Schemas["FeedItem"]) => item.persona.tagline, max: 40 },
];

export function registerSocialCommands(program: Command): void {
  const group = program
    .command("social")
    .description("Follow people, read your activity feed, find users")
    .addHelpText(
      "after",
      "\nA <user> is an id or a username (@ optional).\n" +
        examples(["persona social follow @mara_okafor", "persona social feed --limit 10", "persona social search mara --json"]),
    );

  group
    .command("follow")
    .description("Follow a user (following again changes nothing)")
    .argument("<user>", "id or username")
    .addHelpText("after", examples(["persona social follow mara_okafor", "persona social follow 0193a6c0-… --json"]))
    .action(async (ref: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const follow = await client.social.follow(await resolveUserId(client, ref));
      ctx.out.result(follow, () => ctx.out.line(`Following ${ref} (since ${follow.created_at}).`));
    });

  group
    .command("unfollow")
    .description("Stop following a user")
    .argument("<user>", "id or username")
    .addHelpText("after", examples(["persona social unfollow mara_okafor"]))
    .action(async (ref: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      await client.social.unfollow(await resolveUserId(client, ref));
      ctx.out.result({ success: true }, () => ctx.out.line(`Not following ${ref}.`));
    });

  group
    .command("feed")
    .description("New personas of the people you follow, and trending ones, newest first")
    .option("--limit <n>", "page size (1-100)", positiveInt, 20)
    .option("--offset <n>", "skip this many", nonNegativeInt, 0)
    .addHelpText("after", examples(["persona social feed", "persona social feed --json | jq -r '.data[].persona.name'"]))
    .action(async (options: { limit: number; offset: number }, command: Command) => {
      const ctx = await contextOf(command);
      const page = await ctx.client().social.feed({ limit: options.limit, offset: options.offset });
      ctx.out.result(page, () => {
        printTable(page.data, feedColumns, "(nothing yet: follow someone with `persona social follow`)");
        printPageFooter(page.data.length, page.total, page.offset);
      });
    });

  group
    .command("search")
    .description("Find users by username or display name, best match first")
    .argument("<text>", "at least 2 characters")
    .addOption(new Option("--limit <n>", "most hits (1-50)").argParser(positiveInt).default(20))
    .addHelpText("after", examples(["persona social search mara", "persona social search 'nova' --limit 5 --json"]))
    .action(async (text: string, options: { limit: number }, command: Command) => {
      const ctx = await contextOf(command);
      const result = await ctx.client().social.search(text, { limit: options.limit });
      ctx.out.result(result, () => {
        printTable(result.data, [
          { header: "username", value: (hit) => hit.username },
          { header: "followers", value: (hit) => hit.follower_count },
          { header: "id", value: (hit) => hit.id },
        ], "(no users match)");
        if (result.total > result.data.length) ctx.out.line(`${result.data.length} of ${result.total} matches shown.`);
      });
    });
}
