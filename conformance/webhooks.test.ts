import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { createConversation, createPersona, registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { idOr } from "./support/placeholders.ts";
import { target } from "./support/target.ts";

// Deliveries go to a receiver on this machine when the target allows private URLs (the driver starts
// the real server with WEBHOOKS_ALLOW_PRIVATE_URLS=true); otherwise registration falls back to a
// public HTTPS URL and the delivery log stays empty.

const sleep = (ms: number) => new Promise((wait) => setTimeout(wait, ms));

describe("webhooks", () => {
  let user: TestUser;
  let webhookId: string | undefined;
  let deliveryId: string | undefined;
  let receiver: Server;
  let received = 0;

  beforeAll(async () => {
    user = await registerUser("hooks");
    receiver = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        received++;
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  });
  afterAll(async () => {
    receiver?.closeAllConnections();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  op("webhooks_create", async () => {
    const local = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    let answer = await call("webhooks_create", { token: user.token, json: { url: local, events: ["conversation.created"] } });
    if (answer.status !== 201) {
      // The server resolves the host and refuses private addresses; where names do not resolve
      // (an offline sandbox) that is a 400, which the contract allows, so only 201 is used further.
      const json = { url: "https://example.com/persona/events", events: ["message.created", "conversation.created"] };
      answer = await call("webhooks_create", { token: user.token, json });
    }
    if (answer.status === 201) webhookId = (answer.json as { id: string }).id;
    if (target.stateful && answer.status === 201) expect(answer.json).toMatchObject({ active: true, secret: expect.any(String) });
    // A request the contract refuses: Prism (mock and proxy) judges it itself and reports the
    // violation, so only the real server is asked.
    if (target.kind === "real") await call("webhooks_create", { token: user.token, json: { url: local, events: ["message.deleted"] }, expect: [400] });
  });

  op("webhooks_list", async () => {
    const answer = await call("webhooks_list", { token: user.token, expect: [200] });
    if (target.stateful && webhookId) expect(JSON.stringify(answer.json)).not.toContain("secret");
  });

  op("webhooks_update", async () => {
    const json = { events: ["message.created", "message.failed", "conversation.created"], active: true };
    await call("webhooks_update", { token: user.token, path: { id: idOr(webhookId) }, json, expect: [200] });
  });

  op("webhooks_list_deliveries", async () => {
    if (target.stateful && webhookId) {
      // An event of a subscribed type, then its delivery in the log once the worker has sent it.
      await createConversation(user, await createPersona(user));
      for (let waited = 0; waited < 10_000 && received === 0; waited += 200) await sleep(200);
    }
    for (let waited = 0; ; waited += 200) {
      const answer = await call("webhooks_list_deliveries", { token: user.token, path: { id: idOr(webhookId) }, query: { limit: 10 }, expect: [200] });
      const first = (answer.json as { data?: { id: string; status: string }[] }).data?.[0];
      if (!target.stateful || received === 0 || (first && first.status !== "pending") || waited > 10_000) {
        deliveryId = first?.id;
        break;
      }
      await sleep(200);
    }
  }, 30_000);

  op("webhooks_redeliver", async () => {
    await call("webhooks_redeliver", { token: user.token, path: { id: idOr(webhookId), delivery_id: idOr(deliveryId) }, expect: [202] });
  });

  op("webhooks_delete", async () => {
    await call("webhooks_delete", { token: user.token, path: { id: idOr(webhookId) }, expect: [200] });
  });
});
