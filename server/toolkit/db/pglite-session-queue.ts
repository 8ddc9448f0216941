import type { PGlite } from "@electric-sql/pglite";

interface Pending {
  handlerId: number;
  message: Uint8Array;
  onData: (data: Uint8Array) => void;
  resolve: (bytes: number) => void;
  reject: (error: unknown) => void;
}

/** Work that needs the session to itself, between two clients' exchanges (an online backup). */
interface ExclusiveWork {
  handlerId: typeof EXCLUSIVE;
  work: () => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

const EXCLUSIVE = -1; // no client's handler id, so a client that owns the session never picks it

const SYNC = 0x53; // 'S': ends an extended-protocol exchange (Parse/Bind/Describe/Execute)
const QUERY = 0x51; // 'Q': a whole simple-protocol query
const TERMINATE = 0x58; // 'X'

/**
 * Serialises the clients of one PGlite instance behind pglite-socket.
 *
 * PGlite is a single Postgres session. pglite-socket's own queue interleaves clients message by
 * message, so one client's Bind can land between another's Parse and Bind and both get the wrong
 * unnamed statement ("portal does not exist", rows of the other query). This queue gives one
 * client the session from its first message until its exchange ends (Sync or a simple Query) and
 * no transaction is open; the other clients wait their turn.
 */
export class PgliteSessionQueue {
  readonly #db: PGlite;
  readonly #pending: (Pending | ExclusiveWork)[] = [];
  #owner: number | null = null;
  #running = false;
  #closed = false;
  #draining: Promise<void> = Promise.resolve();

  constructor(db: PGlite) {
    this.#db = db;
  }

  enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ handlerId, message, onData, resolve, reject });
      void this.#drain();
    });
  }

  /**
   * Runs `work` once no client is inside an exchange or a transaction, and lets no client in until
   * it has finished: what it reads of the database is one consistent state.
   */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.#closed) return reject(new Error("the embedded database is closing"));
      this.#pending.push({ handlerId: EXCLUSIVE, work, resolve: resolve as (value: unknown) => void, reject });
      void this.#drain();
    });
  }

  getQueueLength(): number {
    return this.#pending.length;
  }

  clearQueueForHandler(handlerId: number): void {
    for (let index = this.#pending.length - 1; index >= 0; index--) {
      const item = this.#pending[index]!;
      if (item.handlerId !== handlerId) continue;
      this.#pending.splice(index, 1);
      item.reject(new Error("client disconnected"));
    }
  }

  /**
   * Stops serving before the database closes: what waits is refused, what runs finishes. Without
   * it a client's last message could reach PGlite after close() and throw in this thread.
   */
  async close(): Promise<void> {
    this.#closed = true;
    for (const item of this.#pending.splice(0)) item.reject(new Error("the embedded database is closing"));
    await this.#draining;
  }

  async clearTransactionIfNeeded(handlerId: number): Promise<void> {
    if (this.#closed || this.#owner !== handlerId) return;
    if (this.#db.isInTransaction()) await this.#db.exec("ROLLBACK");
    this.#owner = null;
    void this.#drain();
  }

  #drain(): Promise<void> {
    if (this.#running) return this.#draining;
    this.#running = true;
    this.#draining = this.#run();
    return this.#draining;
  }

  async #run(): Promise<void> {
    try {
      for (;;) {
        if (this.#closed) return;
        const index = this.#owner === null ? 0 : this.#pending.findIndex((item) => item.handlerId === this.#owner);
        if (index < 0 || this.#pending.length === 0) return;
        const [next] = this.#pending.splice(index, 1) as [Pending | ExclusiveWork];
        if ("work" in next) {
          await next.work().then(next.resolve, next.reject);
          continue;
        }
        const item = next;
        this.#owner = item.handlerId;
        try {
          let bytes = 0;
          await this.#db.runExclusive(() =>
            this.#db.execProtocolRawStream(item.message, {
              onRawData: (data) => {
                bytes += data.length;
                item.onData(data);
              },
            }),
          );
          item.resolve(bytes);
        } catch (error) {
          item.reject(error);
        }
        const type = item.message[0];
        const startup = type === 0; // startup packets begin with their length, not a type byte
        const exchangeOver = startup || type === SYNC || type === QUERY || type === TERMINATE;
        if (exchangeOver && !this.#closed && !this.#db.isInTransaction()) this.#owner = null;
      }
    } finally {
      this.#running = false;
    }
  }
}
