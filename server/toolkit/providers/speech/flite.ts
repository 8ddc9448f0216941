import { Worker } from "node:worker_threads";
import type { FliteReply, FliteRequest } from "./flite-protocol.ts";

type Pending = { resolve: (reply: FliteReply & { error?: undefined }) => void; reject: (error: Error) => void };
type Outgoing = FliteRequest extends infer R ? (R extends FliteRequest ? Omit<R, "id"> : never) : never;

/**
 * The Flite thread, started on first use. It answers requests in the order they were sent, one
 * sentence at a time, so concurrent streams take turns sentence by sentence. It does not keep the
 * process alive, and a crash fails what was pending and starts a new thread on the next request.
 */
export class FliteThread {
  #worker: Worker | undefined;
  #pending = new Map<number, Pending>();
  #nextId = 0;
  #nextStream = 0;

  newStream(): number {
    return ++this.#nextStream;
  }

  request(message: Outgoing): Promise<FliteReply & { error?: undefined }> {
    const worker = this.#start();
    const id = ++this.#nextId;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.postMessage({ ...message, id } as FliteRequest);
    });
  }

  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    if (!worker) return;
    worker.postMessage({ op: "close" });
    await worker.terminate();
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(new URL("./flite-thread.ts", import.meta.url));
    worker.unref();
    worker.on("message", (reply: FliteReply) => {
      const pending = this.#pending.get(reply.id);
      if (!pending) return;
      this.#pending.delete(reply.id);
      if (reply.error !== undefined) pending.reject(new Error(`Offline speech synthesis failed: ${reply.error}`));
      else pending.resolve(reply);
    });
    const fail = (error: Error) => {
      if (this.#worker === worker) this.#worker = undefined;
      for (const pending of this.#pending.values()) pending.reject(error);
      this.#pending.clear();
    };
    worker.on("error", fail);
    worker.on("exit", (code) => fail(new Error(`The speech thread stopped (exit ${code})`)));
    this.#worker = worker;
    return worker;
  }
}
