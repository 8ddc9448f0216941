import { beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { idOr } from "./support/placeholders.ts";
import { target } from "./support/target.ts";

describe("webhooks", () => {
  let user: TestUser;
  let webhookId: string | undefined;

  beforeAll(async () => {
    user = await registerUser("hooks");
  });

  op("webhooks_create", async () => {
    // The server resolves the host and refuses private addresses; where names do not resolve
    // (an offline sandbox) that is a 400, which the contract allows, so only 201 is used further.
    const json = { url: "https://example.com/persona/events", events: ["message.created", "conversation.created"] };
    const answer = await call("webhooks_create", { token: user.token, json });
    if (answer.status === 201) webhookId = (answer.json as { id: string }).id;
    if (target.stateful && answer.status === 201) expect(answer.json).toMatchObject({ active: true });
  });

  op("webhooks_list", async () => {
    await call("webhooks_list", { token: user.token, expect: [200] });
  });

  op("webhooks_update", async () => {
    const json = { events: ["message.created", "message.failed", "conversation.created"] };
    await call("webhooks_update", { token: user.token, path: { id: idOr(webhookId) }, json, expect: [200] });
  });

  op("webhooks_delete", async () => {
    await call("webhooks_delete", { token: user.token, path: { id: idOr(webhookId) }, expect: [200] });
  });
});
