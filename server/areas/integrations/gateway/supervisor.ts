import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Services } from "../../../toolkit/services.ts";
import { acceptInbound } from "../inbound.ts";
import { fromDiscord, fromTelegram } from "../messages.ts";
import { messengerPolls, tokenOf } from "../service.ts";
import { acquireLeases, activeGatewayIntegrations, noteIssue, releaseLeases, renewLeases, type IntegrationRow } from "../store.ts";
import type { GatewaySession } from "./discord-session.ts";

interface Held {
  row: IntegrationRow;
  session?: GatewaySession;
  closed: boolean;
}

/**
 * Keeps exactly one live gateway connection per active forum integration (and one polling loop per
 * messenger integration when the messenger polls) across every worker
 * process: a connection is held only under a lease row (integration, holder, expires_at) that this
 * process renews every third of INTEGRATIONS_LEASE_MS. A worker that dies stops renewing; once its
 * lease runs out another worker's next round takes it (within 1⅓ lease periods). A lease lost or
 * not renewed in time closes the connection first, so two never overlap for long; an integration
 * deleted, paused or purged is closed at the next round.
 */
export function startGateways(services: Services): { stop: () => Promise<void> } {
  const { knex } = services.db;
  const leaseMs = services.config.integrations.leaseMs;
  const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const held = new Map<string, Held>();
  const retryAt = new Map<string, { at: number; failures: number }>();
  let lastRenewal = Date.now();
  let stopped = false;

  const close = async (id: string) => {
    const entry = held.get(id);
    held.delete(id);
    if (!entry) return;
    entry.closed = true;
    await entry.session?.close().catch((error: unknown) => services.log.warn({ integration: id, reason: (error as Error).message }, "closing a forum gateway failed"));
  };

  /** Gives the connection up for now: backs off (up to 5 minutes) so a refused token does not hammer the platform. */
  const giveUp = async (id: string, reason: string) => {
    const failures = (retryAt.get(id)?.failures ?? 0) + 1;
    retryAt.set(id, { at: Date.now() + Math.min(300_000, 1000 * 2 ** failures), failures });
    services.log.warn({ integration: id, reason }, "forum gateway could not connect");
    await close(id);
    await releaseLeases(knex, [id], holder).catch(() => undefined);
    await noteIssue(knex, id, { code: "platform_error", message: reason, at: services.now().toISOString() }).catch(() => undefined);
  };

  const open = async (row: IntegrationRow) => {
    const entry: Held = { row, closed: false };
    held.set(row.id, entry);
    const log = services.log.child({ integration: row.id });
    const onMessage = (data: Record<string, unknown>) => {
      const current = held.get(row.id)?.row ?? row;
      const message = fromDiscord(data, { id: current.bot_user_id, username: current.bot_username });
      if (message) acceptInbound(services, current, message).catch((error: unknown) => log.error({ err: error }, "a forum message could not be queued"));
    };
    const onFatal = (reason: string) => {
      if (held.get(row.id) === entry) void giveUp(row.id, reason);
    };
    try {
      const token = await tokenOf(services, row);
      // The platforms' client libraries load with the first connection that needs them.
      const session =
        row.platform === "messenger"
          ? (await import("./telegram-session.ts")).openTelegramPolling(services.config.integrations, token, log, async (update) => {
              const current = held.get(row.id)?.row ?? row;
              const message = fromTelegram(update as unknown as Record<string, unknown>, { id: current.bot_user_id, username: current.bot_username });
              if (message) await acceptInbound(services, current, message);
            }, onFatal)
          : await (await import("./discord-session.ts")).openDiscordSession(services.config.integrations, token, log, onMessage, onFatal);
      if (entry.closed) return void (await session.close());
      entry.session = session;
      retryAt.delete(row.id);
      log.info({ holder, platform: row.platform }, row.platform === "messenger" ? "messenger polling started" : "forum gateway connected");
    } catch (error) {
      if (held.get(row.id) === entry) await giveUp(row.id, (error as Error).message);
    }
  };

  const round = async () => {
    const wanted = new Map((await activeGatewayIntegrations(knex, messengerPolls(services))).map((row) => [row.id, row]));
    const gone = [...held.keys()].filter((id) => !wanted.has(id));
    await Promise.all(gone.map(close));
    await releaseLeases(knex, gone, holder);
    const kept = new Set(await renewLeases(knex, [...held.keys()], holder, leaseMs));
    lastRenewal = Date.now();
    await Promise.all([...held.keys()].filter((id) => !kept.has(id)).map(close));
    for (const [id, entry] of held) entry.row = wanted.get(id) ?? entry.row;
    const now = Date.now();
    const free = [...wanted.keys()].filter((id) => !held.has(id) && (retryAt.get(id)?.at ?? 0) <= now);
    for (const id of await acquireLeases(knex, free, holder, leaseMs)) void open(wanted.get(id)!);
  };

  let running: Promise<void> | undefined;
  const tick = () => {
    if (running || stopped) return;
    running = round()
      .catch(async (error: unknown) => {
        services.log.warn({ reason: (error as Error).message }, "forum gateway round failed");
        // Unable to renew for a whole lease: another worker may hold the leases by now.
        if (Date.now() - lastRenewal > leaseMs) await Promise.all([...held.keys()].map(close));
      })
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(tick, Math.max(100, Math.floor(leaseMs / 3)));
  // The first round at once: a restarted worker takes free connections without waiting a period.
  setImmediate(tick);

  return {
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running;
      const ids = [...held.keys()];
      await Promise.all(ids.map(close));
      await releaseLeases(knex, ids, holder).catch(() => undefined);
    },
  };
}
