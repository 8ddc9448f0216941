import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, NotFoundError } from "../../sdk/src/index.ts";
import { runCli } from "../cli/run-cli.ts";
import { createPersona } from "../support/chat.ts";
import type { TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";
import { startPlatforms, startWithPlatforms, type Platforms } from "./helpers.ts";

// The SDK's `integrations` helpers and the CLI's `persona integrations` commands, end to end
// against the server and the platform fakes.

let platforms: Platforms;
let service: TestService;
let owner: TestUser;
let env: Record<string, string>;

beforeAll(async () => {
  platforms = await startPlatforms();
  service = await startWithPlatforms(platforms, { env: { DEFAULT_PLAN: "creator" } });
  owner = await registerUser(service);
  env = { PERSONA_BASE_URL: service.url, PERSONA_API_KEY: await apiKeyFor(service, owner) };
}, 120_000);
afterAll(async () => {
  await service?.close();
  await platforms?.close();
});

describe("SDK integrations", { timeout: 90_000 }, () => {
  it("connects, lists, reads, updates, tests and deletes", async () => {
    const client = createClient({ baseUrl: service.url, accessToken: owner.accessToken, refreshToken: owner.refreshToken });
    const persona = await createPersona(service, owner);
    const discordBot = platforms.discord.addBot();
    const forum = await client.integrations.connectForum({ persona_id: persona.id, bot_token: discordBot.token, guild_id: "884213597310459904", channel_ids: ["884213597310459907"] });
    expect(forum).toMatchObject({ platform: "forum", status: "active" });
    const slackBot = platforms.slack.addBot();
    const workspace = await client.integrations.connectWorkspace({ persona_id: persona.id, bot_token: slackBot.token, workspace_id: slackBot.teamId, channel_ids: ["C1"], signing_secret: "s3cret" });
    expect(workspace.events_url).toContain(`/v1/integrations/${workspace.id}/workspace/events`);
    const messenger = await client.integrations.connectMessenger({ persona_id: persona.id, bot_token: platforms.telegram.addBot().token });
    expect((await client.integrations.list()).data.map((i) => i.id)).toEqual([messenger.id, workspace.id, forum.id]);
    expect(await client.integrations.update(forum.id, { auto_respond: true })).toMatchObject({ auto_respond: true });
    expect((await client.integrations.get(forum.id)).auto_respond).toBe(true);
    expect((await client.integrations.test(forum.id)).test_result.success).toBe(true);
    expect(await client.integrations.delete(forum.id)).toEqual({ id: forum.id, deleted: true });
    await expect(client.integrations.get(forum.id)).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe("CLI integrations", { timeout: 120_000 }, () => {
  it("connects with the token from the environment or stdin, never from the command line, and manages the bot", async () => {
    const persona = await createPersona(service, owner);
    const bot = platforms.telegram.addBot();
    const connected = await runCli(["integrations", "connect", "messenger", "--persona", persona.id, "--json"], { env: { ...env, PERSONA_BOT_TOKEN: bot.token } });
    expect(connected.code, connected.stderr).toBe(0);
    const created = connected.json<{ id: string; platform: string }>();
    expect(created.platform).toBe("messenger");
    expect(connected.stdout).not.toContain(bot.token);

    const forumPersona = await createPersona(service, owner);
    const discordBot = platforms.discord.addBot();
    const forum = await runCli(["integrations", "connect", "forum", "--persona", forumPersona.id, "--guild", "884213597310459904", "--channel", "884213597310459907", "--bot-token-stdin"], { env, input: `${discordBot.token}\n` });
    expect(forum.code, forum.stderr).toBe(0);
    expect(forum.stdout).toContain("forum");

    const missing = await runCli(["integrations", "connect", "messenger", "--persona", persona.id], { env });
    expect(missing.code, missing.stderr).toBe(2);
    expect(missing.stderr).toContain("PERSONA_BOT_TOKEN");

    const listed = await runCli(["integrations", "list", "--json"], { env });
    expect(listed.json<{ data: { id: string }[] }>().data.map((i) => i.id)).toContain(created.id);
    const updated = await runCli(["integrations", "update", created.id, "--active", "false", "--json"], { env });
    expect(updated.json<{ status: string }>().status).toBe("inactive");
    const tested = await runCli(["integrations", "test", created.id], { env });
    expect(tested.stdout).toContain("success");
    const deleted = await runCli(["integrations", "delete", created.id], { env });
    expect(deleted.stdout).toContain(`Disconnected integration ${created.id}`);
    const gone = await runCli(["integrations", "get", created.id], { env });
    expect(gone.code).toBe(4);
  });
});
