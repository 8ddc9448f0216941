import { randomUUID } from "node:crypto";
import type { Knex } from "knex";
import type { Notifications } from "./notifications.ts";

const CHANNEL = "persona_listen_check";
const WAIT_MS = 5_000;

/**
 * Whether a notification sent through `DATABASE_URL` arrives on `DATABASE_LISTEN_URL`'s connection:
 * a listen URL that reaches another database (or another server) would leave every cross-process
 * signal (reply stops, room events, credential invalidation) silently undelivered. Answers the
 * problem, or undefined when it arrived; one LISTEN and one NOTIFY at start, on the connection the
 * service listens on anyway.
 */
export async function listenReachesDatabase(knex: Knex, notifications: Notifications): Promise<string | undefined> {
  const token = randomUUID();
  let timer: NodeJS.Timeout | undefined;
  let arrived!: () => void;
  const received = new Promise<"arrived">((resolve) => (arrived = () => resolve("arrived")));
  const unlisten = await notifications.listen(CHANNEL, (payload) => payload === token && arrived());
  try {
    await knex.raw("select pg_notify(?, ?)", [CHANNEL, token]);
    const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), WAIT_MS)));
    if ((await Promise.race([received, late])) === "arrived") return undefined;
    return `a notification sent through DATABASE_URL did not arrive on DATABASE_LISTEN_URL within ${WAIT_MS / 1000} s: the two must reach the same database`;
  } finally {
    clearTimeout(timer);
    await unlisten();
  }
}
