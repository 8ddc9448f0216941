import { randomUUID } from "node:crypto";
import type { JobHelpers } from "graphile-worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerOAuthClient } from "../../server/areas/auth/oauth/clients.ts";
import { taskList } from "../../server/areas.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";

// Short-lived rows that nothing else removed: OAuth codes and the e-mail outbox (issue 13, item 17).
const HOUR = 60 * 60 * 1000;
let service: TestService;

beforeAll(async () => {
  service = await startTestService();
});

afterAll(async () => {
  await service?.close();
});

describe("the expired_rows_purge task", () => {
  it("removes codes a day past expiry and old outbox mails, and keeps the rest", async () => {
    const { knex } = service.services.db;
    const user = await registerUser(service);
    const client = await registerOAuthClient(service.services, { name: "Purge app", redirectUris: ["https://a.example/cb"] });
    const now = Date.now();
    const code = (hash: string, expiresAgoMs: number) => ({
      code_hash: hash,
      client_id: client.client_id,
      user_id: user.id,
      redirect_uri: "https://a.example/cb",
      scopes: ["personas:read"],
      created_at: new Date(now - expiresAgoMs - 10 * 60 * 1000),
      expires_at: new Date(now - expiresAgoMs),
    });
    await knex("oauth_codes").insert([code("old", 25 * HOUR), code("recent", HOUR)]);
    const mail = (sentAgo: number | null, createdAgo: number) => ({
      id: randomUUID(),
      to: "a@example.com",
      subject: "s",
      text: "t",
      kind: "verify_email",
      created_at: new Date(now - createdAgo),
      sent_at: sentAgo === null ? null : new Date(now - sentAgo),
    });
    const mails = [mail(25 * HOUR, 25 * HOUR), mail(HOUR, HOUR), mail(null, 31 * 24 * HOUR), mail(null, 2 * 24 * HOUR)];
    await knex("email_outbox").insert(mails);

    await taskList(service.services).expired_rows_purge!({}, {} as JobHelpers);

    expect((await knex("oauth_codes").where({ client_id: client.client_id }).select("code_hash")).map((r) => r.code_hash)).toEqual(["recent"]);
    const left = (await knex("email_outbox").whereIn("id", mails.map((m) => m.id)).select("id")).map((r) => r.id).sort();
    expect(left).toEqual([mails[1]!.id, mails[3]!.id].sort());
  });
});
