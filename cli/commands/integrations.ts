import type { Command } from "commander";
import type { Schemas } from "../../sdk/src/index.ts";
import { contextOf } from "../context.ts";
import { usageError } from "../errors.ts";
import { examples } from "../help.ts";
import { printFields, printTable } from "../output.ts";
import { booleanValue, collect } from "../parse.ts";

type Detail = Schemas["IntegrationDetail"];
const PLATFORMS = ["forum", "messenger", "workspace"] as const;

/** Secrets never go on the command line (other users see it in `ps`): stdin, or a named variable. */
async function secretFrom(options: { botTokenStdin?: boolean; botTokenEnv: string }): Promise<string> {
  if (options.botTokenStdin) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    const token = Buffer.concat(chunks).toString("utf8").trim();
    if (!token) throw usageError("--bot-token-stdin: nothing was read from stdin");
    return token;
  }
  const token = process.env[options.botTokenEnv]?.trim();
  if (!token) throw usageError(`the bot token is read from $${options.botTokenEnv} (or use --bot-token-stdin); it is empty`);
  return token;
}

function printIntegration(integration: Detail): void {
  printFields([
    ["id", integration.id],
    ["platform", integration.platform],
    ["persona_id", integration.persona_id],
    ["status", integration.status],
    ...(integration.guild_id ? ([["guild_id", integration.guild_id]] as [string, unknown][]) : []),
    ...(integration.workspace_id ? ([["workspace_id", integration.workspace_id]] as [string, unknown][]) : []),
    ...(integration.channel_ids ? ([["channel_ids", integration.channel_ids]] as [string, unknown][]) : []),
    ["auto_respond", integration.auto_respond],
    ["message_count", integration.message_count],
    ["last_message_at", integration.last_message_at],
    ...(integration.last_error ? ([["last_error", `${integration.last_error.code}: ${integration.last_error.message}`]] as [string, unknown][]) : []),
    ...(integration.events_url ? ([["events_url", integration.events_url]] as [string, unknown][]) : []),
    ["connected_at", integration.connected_at],
  ]);
}

/** `persona integrations …`: a persona's bots on forum, messenger and workspace platforms. */
export function registerIntegrationCommands(program: Command): void {
  const group = program
    .command("integrations")
    .description("Connect personas to forum, messenger and workspace bots; list, change, test and disconnect them")
    .addHelpText(
      "after",
      examples([
        "PERSONA_BOT_TOKEN=… persona integrations connect messenger --persona 0193a8e1-…",
        "persona integrations connect forum --persona 0193a8e1-… --guild 884213597310459904 --channel 884213597310459907 --bot-token-stdin < token.txt",
        "persona integrations list",
        "persona integrations update 0193a8e1-… --auto-respond true",
        "persona integrations test 0193a8e1-…",
      ]),
    );

  group
    .command("connect")
    .description("Connect a persona's bot; the token is checked with the platform and never shown again")
    .argument("<platform>", `one of ${PLATFORMS.join(", ")}`)
    .requiredOption("--persona <id>", "one of your personas")
    .option("--guild <id>", "forum: the server (guild) the bot serves")
    .option("--workspace <id>", "workspace: the workspace the bot serves")
    .option("--channel <id...>", "forum and workspace: channel(s) to answer in", collect)
    .option("--bot-token-env <name>", "environment variable holding the bot token", "PERSONA_BOT_TOKEN")
    .option("--bot-token-stdin", "read the bot token from stdin instead")
    .option("--signing-secret-env <name>", "workspace: environment variable holding the app's signing secret", "PERSONA_SIGNING_SECRET")
    .action(
      async (
        platform: string,
        options: { persona: string; guild?: string; workspace?: string; channel?: string[]; botTokenEnv: string; botTokenStdin?: boolean; signingSecretEnv: string },
        command: Command,
      ) => {
        if (!PLATFORMS.includes(platform as (typeof PLATFORMS)[number])) throw usageError(`unknown platform ${platform}: use ${PLATFORMS.join(", ")}`);
        if (platform === "forum" && (!options.guild || !options.channel?.length)) throw usageError("forum needs --guild and at least one --channel");
        if (platform === "workspace" && (!options.workspace || !options.channel?.length)) throw usageError("workspace needs --workspace and at least one --channel");
        const ctx = await contextOf(command);
        const bot_token = await secretFrom(options);
        const client = ctx.client().integrations;
        let created: Detail;
        if (platform === "forum") created = await client.connectForum({ persona_id: options.persona, bot_token, guild_id: options.guild!, channel_ids: options.channel! });
        else if (platform === "messenger") created = await client.connectMessenger({ persona_id: options.persona, bot_token });
        else {
          const signing = process.env[options.signingSecretEnv]?.trim();
          created = await client.connectWorkspace({ persona_id: options.persona, bot_token, workspace_id: options.workspace!, channel_ids: options.channel!, ...(signing ? { signing_secret: signing } : {}) });
        }
        ctx.out.result(created, () => {
          printIntegration(created);
          if (created.events_url) ctx.out.notice(`Enter ${created.events_url} as the workspace app's Events API request URL.`);
        });
      },
    );

  group
    .command("list")
    .description("List your integrations, newest first")
    .action(async (_options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const list = await ctx.client().integrations.list();
      ctx.out.result(list, () =>
        printTable(list.data, [
          { header: "id", value: (i) => i.id },
          { header: "platform", value: (i) => i.platform },
          { header: "persona_id", value: (i) => i.persona_id },
          { header: "status", value: (i) => i.status },
          { header: "channels", value: (i) => i.channel_ids ?? "", max: 40 },
          { header: "messages", value: (i) => i.message_count },
        ]),
      );
    });

  group
    .command("get")
    .description("Show one integration, with why its last message went unanswered, if it did")
    .argument("<id>", "the integration's id")
    .action(async (id: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const integration = await ctx.client().integrations.get(id);
      ctx.out.result(integration, () => printIntegration(integration));
    });

  group
    .command("update")
    .description("Pause or resume the bot, or change its channels or reply mode")
    .argument("<id>", "the integration's id")
    .option("--active <true|false>", "false pauses the bot, true resumes it", booleanValue)
    .option("--auto-respond <true|false>", "true: answer every message in its channels; false: only when addressed", booleanValue)
    .option("--channel <id...>", "replace the channel list (forum and workspace)", collect)
    .action(async (id: string, options: { active?: boolean; autoRespond?: boolean; channel?: string[] }, command: Command) => {
      const ctx = await contextOf(command);
      const updated = await ctx.client().integrations.update(id, {
        ...(options.active === undefined ? {} : { active: options.active }),
        ...(options.autoRespond === undefined ? {} : { auto_respond: options.autoRespond }),
        ...(options.channel ? { channel_ids: options.channel } : {}),
      });
      ctx.out.result(updated, () => printIntegration(updated));
    });

  group
    .command("delete")
    .description("Disconnect the bot and forget its token")
    .argument("<id>", "the integration's id")
    .action(async (id: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const deleted = await ctx.client().integrations.delete(id);
      ctx.out.result(deleted, () => ctx.out.line(`Disconnected integration ${deleted.id}.`));
    });

  group
    .command("test")
    .description("Send a test message through the bot")
    .argument("<id>", "the integration's id")
    .action(async (id: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const result = await ctx.client().integrations.test(id);
      ctx.out.result(result, () =>
        printFields([
          ["success", result.test_result.success],
          ["latency_ms", result.test_result.latency_ms],
          ["message_id", result.test_result.message_id],
          ["delivered_at", result.test_result.delivered_at],
          ...(result.test_result.error ? ([["error", result.test_result.error]] as [string, unknown][]) : []),
        ]),
      );
    });
}
