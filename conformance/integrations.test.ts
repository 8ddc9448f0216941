import { beforeAll, describe } from "vitest";
import { call } from "./support/client.ts";
import { createPersona, registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { idOr } from "./support/placeholders.ts";

// Connecting a bot checks its token with the chat platform, which a conformance run cannot reach:
// the connections are judged by the contract only (201, or 400/502 for a token the platform refuses),
// and the calls on an integration use it when one was made.
describe("integrations", () => {
  let user: TestUser;
  let personaId: string | undefined;
  let integrationId: string | undefined;

  beforeAll(async () => {
    user = await registerUser("bots");
    personaId = await createPersona(user);
  });

  const connected = (json: unknown) => {
    integrationId ??= (json as { id?: string } | undefined)?.id;
  };

  op("integrations_connect_forum", async () => {
    const json = { persona_id: idOr(personaId), bot_token: "MTE4NDIxMzU5NzMxMDQ1OTkwNA.GhT2xq.conformance", guild_id: "884213597310459904", channel_ids: ["884213597310459907"] };
    const answer = await call("integrations_connect_forum", { token: user.token, json });
    if (answer.status === 201) connected(answer.json);
  });

  op("integrations_connect_messenger", async () => {
    const json = { persona_id: idOr(personaId), bot_token: "7310459904:AAHf3kq9ZpXconformance" };
    const answer = await call("integrations_connect_messenger", { token: user.token, json });
    if (answer.status === 201) connected(answer.json);
  });

  op("integrations_connect_workspace", async () => {
    const json = { persona_id: idOr(personaId), bot_token: "xoxb-4102938475-conformance", workspace_id: "T04A7QX2M9", channel_ids: ["C05B8RY3N1"] };
    const answer = await call("integrations_connect_workspace", { token: user.token, json });
    if (answer.status === 201) connected(answer.json);
  });

  op("integrations_list", async () => {
    await call("integrations_list", { token: user.token, expect: [200] });
  });

  op("integrations_get", async () => {
    await call("integrations_get", { token: user.token, path: { id: idOr(integrationId) }, expect: [200] });
  });

  op("integrations_update", async () => {
    const json = { active: false, auto_respond: true };
    await call("integrations_update", { token: user.token, path: { id: idOr(integrationId) }, json, expect: [200] });
  });

  op("integrations_test", async () => {
    // The test message goes to the platform too: judged by the contract only.
    await call("integrations_test", { token: user.token, path: { id: idOr(integrationId) } });
  });

  op("integrations_delete", async () => {
    await call("integrations_delete", { token: user.token, path: { id: idOr(integrationId) }, expect: [200] });
  });
});
