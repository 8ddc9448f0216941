import type { Response } from "express";

/**
 * A server-sent events writer in the manner of hono's `streamSSE`: named events with JSON data,
 * written and flushed at once (no buffering, no compression), a comment line every `keepAliveMs`
 * so that proxies keep the connection open, and `aborted` once the client has gone.
 */
export class SSEWriter {
  readonly #res: Response;
  readonly #controller = new AbortController();
  #keepAlive: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(res: Response, options: { keepAliveMs: number }) {
    this.#res = res;
    res.status(200);
    res.set({
      "Content-Type": "text/event-stream; charset=utf-8",
      // no-transform: proxies must neither compress nor buffer the stream.
      "Cache-Control": "no-cache, no-transform",
      Connection: "keep-alive",
      "X-Accel-Buffering": "no",
    });
    res.flushHeaders();
    res.socket?.setNoDelay(true);
    res.on("close", () => {
      if (!this.#closed) this.#controller.abort(new DOMException("The client disconnected", "AbortError"));
      this.#stop();
    });
    this.#keepAlive = setInterval(() => this.comment("keep-alive"), options.keepAliveMs);
    this.#keepAlive.unref();
  }

  /** Aborts when the client disconnects before the stream is closed. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get open(): boolean {
    return !this.#closed && !this.#controller.signal.aborted;
  }

  /** One event; its data is JSON on a single line, so it needs no `data:` splitting. */
  event(name: string, data: unknown): void {
    if (this.open) this.#res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
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
