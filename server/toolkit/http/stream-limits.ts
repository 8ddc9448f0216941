import type { Response } from "express";
import { refused } from "../metrics/http.ts";
import { rateLimited } from "./error-catalogue.ts";

/**
 * Open server-sent event streams per user (issue 31 L6: one account held 1,000 room-event streams).
 * A stream leaves admission control once it opens (sse.ts), so nothing else bounds how many a user
 * keeps: each takes one of the user's `STREAMS_PER_USER` places here, before any work of its
 * request, and gives it back when its response closes. Counted in this process: a stream lives on
 * one connection of one process, and a process that dies takes its streams and its counts with it.
 */

/** What a refused stream is told to wait: a place frees only when one of the user's streams closes. */
export const STREAM_RETRY_AFTER_SECONDS = 5;

/** The open streams of each owner in one process (created in runtime.ts, carried on `Services`). */
export class StreamPlaces {
  readonly #open = new Map<string, number>();

  /** Takes a place for `owner` unless it holds `limit` already. */
  take(owner: string, limit: number): boolean {
    const open = this.#open.get(owner) ?? 0;
    if (open >= limit) return false;
    this.#open.set(owner, open + 1);
    return true;
  }

  give(owner: string): void {
    const open = (this.#open.get(owner) ?? 0) - 1;
    // An owner without streams leaves no entry behind: the map stays as large as the open streams.
    if (open > 0) this.#open.set(owner, open);
    else this.#open.delete(owner);
  }
}

// A property of the response, as raw-body.ts keeps the raw body on the request.
const PLACED = Symbol("stream place");
type Placed = { [PLACED]?: true };

/**
 * Takes one of the user's stream places for this response, or throws 429 `rate_limited` with
 * Retry-After (OpenAI's envelope under /openai/v1, by that prefix's error handler). Call it first
 * in a streaming operation's handler, before the work whose result the stream carries; the place is
 * given back when the response closes, whether the stream ended, the client left or the request
 * failed before its stream opened. Taking it again for the same response is a no-op.
 */
// Structural rather than `Services`: services.ts names `StreamPlaces`, and imports form no cycle.
export function takeStreamPlace(services: { config: { streamsPerUser: number }; streamPlaces: StreamPlaces }, res: Response, userId: string): void {
  const response = res as Response & Placed;
  if (response[PLACED]) return;
  // The client left already: its stream will write nowhere and needs no place.
  if (res.closed) {
    response[PLACED] = true;
    return;
  }
  const owner = `user:${userId}`;
  const limit = services.config.streamsPerUser;
  const own = services.streamPlaces;
  if (!own.take(owner, limit)) {
    refused("stream_limit");
    throw rateLimited(`At most ${limit} streams may be open at once per user; close one, or retry in ${STREAM_RETRY_AFTER_SECONDS} s`, STREAM_RETRY_AFTER_SECONDS);
  }
  response[PLACED] = true;
  res.once("close", () => own.give(owner));
}

/** Whether a stream place was taken for this response (sse.ts refuses to open a stream without one). */
export function holdsStreamPlace(res: Response): boolean {
  return (res as Response & Placed)[PLACED] === true;
}
