import { createHmac } from "node:crypto";
import { beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { createPersona, registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { idOr } from "./support/placeholders.ts";
import { PLATFORM_BOTS } from "./support/platform-bots.ts";
import { target } from "./support/target.ts";

// Connecting a bot checks its token with the chat platform. The driver points the real server at
// loopback fakes of the three platforms that know the suite's bots (conformance/driver/platforms.ts),
// so there every call runs its real flow; another server refuses the tokens (400) or cannot reach
// the platform (502), and the calls on an integration then use a placeholder id.
describe("integrations", () => {
  let user: TestUser;
  let personaId: string | undefined;
  const ids: Partial<Record<"forum" | "messenger" | "workspace", string>> = {};
  // Only a server the driver started has the fakes behind it.
  const connects = target.stateful && process.env.CONFORMANCE_PLATFORM_FAKES === "true" ? [201] : undefined;

  beforeAll(async () => {
    user = await registerUser("bots");
    personaId = await createPersona(user);
  });

  const connected = (platform: keyof typeof ids, answer: { status: number; json: unknown }) => {
    if (answer.status === 201) ids[platform] = (answer.json as { id: string }).id;
  };

  op("integrations_connect_forum", async () => {
    const { token, guildId, channelId } = PLATFORM_BOTS.forum;
    const answer = await call("integrations_connect_forum", { token: user.token, json: { persona_id: idOr(personaId), bot_token: token, guild_id: guildId, channel_ids: [channelId] }, expect: connects });
    connected("forum", answer);
    if (target.stateful && answer.status === 201) expect(JSON.stringify(answer.json)).not.toContain(token);
  });

  op("integrations_connect_messenger", async () => {
    const answer = await call("integrations_connect_messenger", { token: user.token, json: { persona_id: idOr(personaId), bot_token: PLATFORM_BOTS.messenger.token }, expect: connects });
    connected("messenger", answer);
  });

  op("integrations_connect_workspace", async () => {
    const { token, workspaceId, channelId, signingSecret } = PLATFORM_BOTS.workspace;
    const json = { persona_id: idOr(personaId), bot_token: token, workspace_id: workspaceId, channel_ids: [channelId], signing_secret: signingSecret };
    const answer = await call("integrations_connect_workspace", { token: user.token, json, expect: connects });
    connected("workspace", answer);
  });

  op("integrations_list", async () => {
    const answer = await call("integrations_list", { token: user.token, expect: [200] });
    if (target.stateful && ids.forum) expect((answer.json as { total: number }).total).toBe(Object.keys(ids).length);
  });

  op("integrations_get", async () => {
    await call("integrations_get", { token: user.token, path: { id: idOr(ids.forum) }, expect: [200] });
  });

  op("integrations_update", async () => {
    const json = { active: false, auto_respond: true };
    await call("integrations_update", { token: user.token, path: { id: idOr(ids.forum) }, json, expect: [200] });
  });

  op("integrations_test", async () => {
    // Posts to the platform: 200 (success or a refusal) or 502 when it cannot be reached.
    await call("integrations_test", { token: user.token, path: { id: idOr(ids.forum) }, expect: ids.forum && connects ? [200] : undefined });
  });

  op("integrations_messenger_update", async () => {
    // Only the platform knows the webhook's secret token: a wrong one is refused and nothing is processed.
    const json = { update_id: 804211937, message: { message_id: 52, date: 1795000000, chat: { id: 81234567, type: "private" }, from: { id: 81234567, is_bot: false, first_name: "Ada" }, text: "Hello!" } };
    await call("integrations_messenger_update", { path: { id: idOr(ids.messenger) }, headers: { "x-telegram-bot-api-secret-token": "not-the-secret" }, json, expect: [401] });
  });

  op("integrations_workspace_event", async () => {
    const body = JSON.stringify({ type: "url_verification", token: "unused", challenge: "conformance-challenge" });
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = `v0=${createHmac("sha256", PLATFORM_BOTS.workspace.signingSecret).update(`v0:${timestamp}:${body}`).digest("hex")}`;
    const answer = await call("integrations_workspace_event", {
      path: { id: idOr(ids.workspace) },
      headers: { "x-slack-signature": signature, "x-slack-request-timestamp": timestamp },
      json: JSON.parse(body),
      // Behind the proxy the body may be re-serialised, which no longer matches the signature.
      expect: target.kind === "real" ? [200] : undefined,
    });
    if (target.kind === "real" && answer.status === 200) expect(answer.json).toEqual({ received: true, challenge: "conformance-challenge" });
  });

  op("integrations_delete", async () => {
    for (const id of [ids.messenger, ids.workspace]) if (id) await call("integrations_delete", { token: user.token, path: { id }, expect: [200] });
    await call("integrations_delete", { token: user.token, path: { id: idOr(ids.forum) }, expect: [200] });
  });
});
