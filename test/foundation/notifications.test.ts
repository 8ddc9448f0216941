import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../server/toolkit/logger.ts";
import { loadConfig } from "../../server/toolkit/config.ts";
import { postgresNotifications } from "../../server/toolkit/db/notifications.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";
import { until } from "../support/wait.ts";

// Rooms fan out and credential caches invalidate through these signals: they must arrive once, only
// after the transaction that sent them commits, and survive a lost connection.
describe(`notifications (${databaseKind})`, () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    // close(), not stop(): the service may be lent to this file, and goes back to the worker.
    await service?.close();
  });

  it("delivers a payload to every listener of the channel, and none of another", async () => {
    const { notifications } = service.services.db;
    const seen: string[] = [];
    const other: string[] = [];
    const stopA = await notifications.listen("probe_a", (payload) => seen.push(`a:${payload}`));
    const stopB = await notifications.listen("probe_a", (payload) => seen.push(`b:${payload}`));
    const stopOther = await notifications.listen("probe_other", (payload) => other.push(payload));
    await notifications.notify("probe_a", "0193a6e1-5c2d-7f10-8a4b-3c9d2e1f0a77");
    await expect.poll(() => seen.length).toBe(2);
    expect(seen.sort()).toEqual(["a:0193a6e1-5c2d-7f10-8a4b-3c9d2e1f0a77", "b:0193a6e1-5c2d-7f10-8a4b-3c9d2e1f0a77"]);
    await stopA();
    await notifications.notify("probe_a", "second");
    await expect.poll(() => seen.length).toBe(3);
    expect(seen[2]).toBe("b:second");
    expect(other).toEqual([]);
    await Promise.all([stopB(), stopOther()]);
  });

  it("delivers what a transaction sent only when it commits", async () => {
    const { notifications, knex } = service.services.db;
    const seen: string[] = [];
    const markers: string[] = [];
    const stop = await notifications.listen("probe_trx", (payload) => seen.push(payload));
    const stopMarkers = await notifications.listen("probe_trx_marker", (payload) => markers.push(payload));
    await knex
      .transaction(async (trx) => {
        await notifications.notify("probe_trx", "rolled back", trx);
        throw new Error("roll back");
      })
      .catch(() => undefined);
    await knex.transaction(async (trx) => {
      await notifications.notify("probe_trx", "committed", trx);
      // Not before the commit: a receiver would read rows it cannot see yet. A notification sent
      // after it outside the transaction arrives first; one sent at once would have been before it.
      await notifications.notify("probe_trx_marker", "after");
      await until("the marker sent outside the transaction", () => markers.length > 0, 10_000);
      expect(seen).toEqual([]);
    });
    await expect.poll(() => seen).toEqual(["committed"]);
    await Promise.all([stop(), stopMarkers()]);
  });

  it("refuses a channel name that is not a plain identifier", async () => {
    await expect(service.services.db.notifications.notify("bad channel; drop", "x")).rejects.toThrow(/Invalid notification channel/);
  });

  it.runIf(databaseKind === "postgres")("listens again after its connection is killed, and says so", async () => {
    const { knex, url } = service.services.db;
    const log = createLogger(loadConfig({ LOG_LEVEL: "silent" }));
    const own = postgresNotifications(url, knex, log);
    try {
      let reconnected = 0;
      own.onReconnect(() => reconnected++);
      const seen: string[] = [];
      await own.listen("probe_reconnect", (payload) => seen.push(payload));
      await own.notify("probe_reconnect", "before");
      await expect.poll(() => seen).toContain("before");
      await knex.raw("select pg_terminate_backend(pid) from pg_stat_activity where query = 'LISTEN probe_reconnect' and pid <> pg_backend_pid()");
      await expect.poll(() => reconnected, { timeout: 10_000 }).toBeGreaterThan(0);
      await own.notify("probe_reconnect", "after");
      await expect.poll(() => seen).toContain("after");
    } finally {
      await own.close();
    }
  });
});
