import { RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";

export interface RateDecision {
  allowed: boolean;
  remaining: number;
  /** Milliseconds until the window resets. */
  msBeforeNext: number;
}

interface KeyState {
  /** Points the shared store had counted at the last sync. */
  shared: number;
  /** Points consumed here since then, not yet written to the store. */
  pending: number;
  windowEnds: number;
  flushing: Promise<void> | undefined;
}

/**
 * A per-client limit counted in a shared store (rate-limiter-flexible's Postgres limiter), with
 * the store written in batches instead of once per request.
 *
 * Far from the limit, a request is counted locally and the local count is written to the store
 * within `flushMs` (one upsert per client, not per request). Near the limit - fewer than `margin`
 * points left by the local estimate - every request is counted in the store before it is answered,
 * so the limit is exact where it matters, across every process sharing the store. The margin is
 * 10% of the limit and at least 50, so small limits are always counted in the store. The price:
 * `Remaining` can lag by what other processes counted in their last `flushMs`, and only a burst of
 * more than `margin` requests within `flushMs`, spread over processes, can pass the limit.
 */
export class SharedRateLimiter {
  readonly #store: RateLimiterAbstract;
  readonly #points: number;
  readonly #margin: number;
  readonly #states = new Map<string, KeyState>();
  readonly #timer: NodeJS.Timeout;

  constructor(store: RateLimiterAbstract, options: { points: number; flushMs?: number; margin?: number }) {
    this.#store = store;
    this.#points = options.points;
    this.#margin = options.margin ?? Math.max(50, Math.ceil(options.points * 0.1));
    this.#timer = setInterval(() => void this.flushAll(), options.flushMs ?? 100);
    this.#timer.unref();
  }

  async consume(key: string): Promise<RateDecision> {
    return this.consumeLocally(key) ?? this.#consumeInStore(key, 1);
  }

  /**
   * The decision without the store, when this process may count the request itself (far from the
   * limit); undefined when it must be counted in the store (`consume`). Synchronous, so the common
   * case costs a request no promise and no turn of the event loop.
   */
  consumeLocally(key: string): RateDecision | undefined {
    const now = Date.now();
    const state = this.#states.get(key);
    if (!state || state.windowEnds <= now) return undefined;
    const used = state.shared + state.pending + 1;
    if (this.#points - used < this.#margin) return undefined;
    state.pending += 1;
    return { allowed: true, remaining: this.#points - used, msBeforeNext: state.windowEnds - now };
  }

  /** Writes every pending count to the store. */
  async flushAll(): Promise<void> {
    const now = Date.now();
    const flushes: Promise<void>[] = [];
    for (const [key, state] of this.#states) {
      if (state.pending > 0) flushes.push(this.#flush(key, state));
      else if (state.windowEnds <= now && !state.flushing) this.#states.delete(key);
    }
    await Promise.all(flushes);
  }

  stop(): Promise<void> {
    clearInterval(this.#timer);
    return this.flushAll();
  }

  #flush(key: string, state: KeyState): Promise<void> {
    state.flushing ??= (async () => {
      const points = state.pending;
      state.pending = 0;
      try {
        await this.#consumeInStore(key, points, state);
      } catch {
        state.pending += points; // the store was unreachable: keep the count for the next flush
      } finally {
        state.flushing = undefined;
      }
    })();
    return state.flushing;
  }

  async #consumeInStore(key: string, points: number, known?: KeyState): Promise<RateDecision> {
    const state = known ?? this.#states.get(key);
    // Pending points ride along with this write, so the store sees them before it decides.
    const carried = state && !known ? state.pending : 0;
    if (state && !known) state.pending = 0;
    let result: RateLimiterRes;
    let allowed = true;
    try {
      result = await this.#store.consume(key, points + carried);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) {
        if (state && !known) state.pending += carried;
        throw rejection;
      }
      result = rejection;
      allowed = false;
    }
    const now = Date.now();
    const entry = this.#states.get(key) ?? { shared: 0, pending: 0, windowEnds: 0, flushing: undefined };
    entry.shared = result.consumedPoints;
    entry.windowEnds = now + result.msBeforeNext;
    this.#states.set(key, entry);
    return { allowed, remaining: Math.max(0, this.#points - result.consumedPoints - entry.pending), msBeforeNext: result.msBeforeNext };
  }
}
