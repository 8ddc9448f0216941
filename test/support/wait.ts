// Waiting in tests is for a condition, never for a fixed time: a loaded machine makes any fixed
// time too short, and an idle one makes it too long.

export const sleep = (ms: number) => new Promise((wait) => setTimeout(wait, ms));

/** Polls `check` until it answers something truthy (a throw counts as not yet), or fails naming `what` after `ms`. */
export async function until<T>(what: string, check: () => Promise<T | undefined | null | false> | T | undefined | null | false, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await Promise.resolve().then(check).catch(() => undefined);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(50);
  }
}

/** Polls `check` until it answers something truthy, or fails after `ms`; a throw of `check` fails at once. */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await sleep(50);
  }
}
