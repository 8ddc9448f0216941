import type { Worker } from "node:cluster";
import type { Knex } from "knex";
import { localNotifications, type Notifications } from "./notifications.ts";

// Processes of one `persona serve --processes N` on the embedded database: PGlite's socket does not
// carry NOTIFY between connections, so each process's in-process bus is joined to the others' over
// cluster IPC, through the primary.
const MESSAGE = "persona:notify";

interface Relayed {
  type: typeof MESSAGE;
  channel: string;
  payload: string;
}

const isRelayed = (message: unknown): message is Relayed =>
  typeof message === "object" && message !== null && (message as Relayed).type === MESSAGE && typeof (message as Relayed).channel === "string";

/**
 * Notifications of a cluster worker on the shared embedded database: delivered in this process as
 * the in-process bus does (after commit), and sent to the primary, which passes them to the others.
 */
export function clusterNotifications(): Notifications {
  const local = localNotifications();
  const fromOthers = (message: unknown) => {
    // Delivered here as a local notification without a transaction: at once, and not sent back.
    if (isRelayed(message)) void local.notify(message.channel, message.payload);
  };
  process.on("message", fromOthers);
  async function notify(channel: string, payload: string, trx?: Knex | Knex.Transaction) {
    await local.notify(channel, payload, trx);
    const send = () => process.send?.({ type: MESSAGE, channel, payload } satisfies Relayed);
    if (trx && "executionPromise" in trx) trx.executionPromise.then(send, () => {});
    else send();
  }
  return {
    listen: local.listen,
    onReconnect: local.onReconnect,
    notify,
    // Delivered here and sent to the others once the carrying statement committed.
    inStatement: (channel: string, payload: string) => ({ afterCommit: () => notify(channel, payload) }),
    async close() {
      process.off("message", fromOthers);
      await local.close();
    },
  };
}

/** In the primary: passes each worker's notifications on to every other worker. */
export function relayNotifications(from: Worker, all: () => Iterable<Worker>): void {
  from.on("message", (message: unknown) => {
    if (!isRelayed(message)) return;
    for (const worker of all()) if (worker !== from && worker.isConnected()) worker.send(message);
  });
}
