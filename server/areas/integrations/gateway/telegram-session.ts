import type { Update } from "grammy/types";
import type { Logger } from "../../../toolkit/logger.ts";
import { PollingRefused, TelegramPoller } from "../platforms/telegram-polling.ts";
import type { PlatformSettings } from "../platforms/types.ts";
import type { GatewaySession } from "./discord-session.ts";

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });

/**
 * A messenger bot's long-polling loop, for servers the platform cannot call back. Each batch is
 * handed over (queued) before the next call confirms it by its offset, so a worker that dies
 * mid-batch leaves it to the next holder; the event ids drop what was queued twice. Network errors
 * back off up to 30 s; a refusal ends the loop through `onFatal`.
 */
export function openTelegramPolling(
  settings: PlatformSettings,
  token: string,
  log: Logger,
  onUpdate: (update: Update) => Promise<void>,
  onFatal: (reason: string) => void,
): GatewaySession {
  const poller = new TelegramPoller(settings, token);
  const stop = new AbortController();
  const loop = (async () => {
    let failures = 0;
    while (!stop.signal.aborted) {
      try {
        for (const update of await poller.next(stop.signal)) await onUpdate(update);
        failures = 0;
      } catch (error) {
        if (stop.signal.aborted) break;
        if (error instanceof PollingRefused) {
          onFatal(error.message);
          break;
        }
        failures += 1;
        log.warn({ reason: (error as Error).message }, "messenger polling failed; retrying");
        await sleep(Math.min(30_000, 500 * 2 ** failures), stop.signal);
      }
    }
  })();
  return {
    close: async () => {
      stop.abort();
      await loop;
    },
  };
}
