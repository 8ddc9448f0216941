import type { Response } from "express";
import { leaveAdmission } from "./admission.ts";
import { holdsStreamPlace } from "./stream-limits.ts";
import { streamOpened } from "../metrics/http.ts";

/**
 * Aborts with `reason` when the connection closes before the response has ended: the client left.
 * Taken before a response starts, it also covers the work done before the first byte.
 */
export function abortOnClose(res: Response, reason?: unknown): AbortSignal {
  const controller = new AbortController();
  res.once("close", () => {
    // Made only when needed: a DOMException captures a stack, which every stream paid for.
    if (!res.writableEnded) controller.abort(reason ?? new DOMException("The client disconnected", "AbortError"));
  });
  return controller.signal;
}

/**
 * One event as SSE text; its data is JSON on a single line, so it needs no `data:` splitting. `id`
 * is what a reconnecting client sends back as `Last-Event-ID` (an event without one leaves it as is).
 */
export function sseFrame(name: string, data: unknown, id?: string): string {
  return `${id === undefined ? "" : `id: ${id}\n`}event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * A server-sent events writer in the manner of hono's `streamSSE`: named events with JSON data,
 * written and flushed at once (no buffering, no compression), a comment line every `keepAliveMs`
 * so that proxies keep the connection open, and `signal` aborted once the client has gone.
 */
export class SSEWriter {
  readonly #res: Response;
  readonly #signal: AbortSignal;
  #keepAlive: NodeJS.Timeout | undefined;
  #closed = false;

  /** `signal`: what tells that the client left, when the caller took it before the stream (`abortOnClose`). */
  constructor(res: Response, options: { keepAliveMs: number; signal?: AbortSignal }) {
    // issue 31 L6: every stream counts against its user's open streams; an operation that forgot
    // to take its place (stream-limits.ts) fails its tests rather than streaming uncounted.
    if (!holdsStreamPlace(res)) throw new Error("A stream was opened without taking its user's stream place (takeStreamPlace)");
    this.#res = res;
    this.#signal = options.signal ?? abortOnClose(res);
    res.status(200);
    // No `Connection` header: Node writes the one the request allows. Setting `keep-alive` made Node
    // keep a connection the client had asked to close, and the client's next request on it was then
    // refused by the parser as data after `Connection: close` (issue 35, ADR 0305).
    res.set({
      "Content-Type": "text/event-stream; charset=utf-8",
      // no-transform: proxies must neither compress nor buffer the stream.
      "Cache-Control": "no-cache, no-transform",
      "X-Accel-Buffering": "no",
    });
    res.flushHeaders();
    leaveAdmission(res);
    streamOpened(res);
    res.socket?.setNoDelay(true);
    res.once("close", () => this.#stop());
    this.#keepAlive = setInterval(() => this.comment("keep-alive"), options.keepAliveMs);
    this.#keepAlive.unref();
  }

  /** Aborts when the client disconnects before the stream is closed. */
  get signal(): AbortSignal {
    return this.#signal;
  }

  get open(): boolean {
    return !this.#closed && !this.#signal.aborted;
  }

  /** One event (see `sseFrame`). */
  event(name: string, data: unknown, id?: string): void {
    this.frame(sseFrame(name, data, id));
  }

  /** An event formatted already: one frame serialized once for many streams. */
  frame(text: string): void {
    if (this.open) this.#res.write(text);
  }

  /** An unnamed event (`data:` only, as OpenAI's streams are): JSON, or a string sent as it is. */
  data(data: unknown): void {
    if (this.open) this.#res.write(`data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
  }

  comment(text: string): void {
    if (this.open) this.#res.write(`: ${text.replace(/[\r\n]+/g, " ")}\n\n`);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#stop();
    this.#res.end();
  }

  #stop(): void {
    clearInterval(this.#keepAlive);
  }
}
