import { connect, type Socket } from "node:net";

/** One HTTP/1.x answer as it came off the wire. */
export interface WireResponse {
  /** `HTTP/1.1`, or `HTTP/1.0`. */
  version: string;
  status: number;
  /** Header names in lower case; a repeated header's values joined with ", ". */
  headers: Record<string, string>;
  body: string;
}

const HEAD_END = "\r\n\r\n";

/**
 * A client connection written byte for byte (node:net), for what `fetch` hides: the `Connection`
 * header, reusing a socket, HTTP/1.0, pipelining. Answers are read off one buffer in order, framed
 * by Content-Length, chunked encoding, or (neither) the end of the connection.
 */
export class RawConnection {
  readonly #socket: Socket;
  #buffer = Buffer.alloc(0);
  #ended = false;
  #wake: (() => void) | undefined;
  /** Settles when the server has closed its side of the connection. */
  readonly closed: Promise<void>;

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.on("data", (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      this.#notify();
    });
    this.closed = new Promise((resolve) => {
      const done = () => {
        this.#ended = true;
        this.#notify();
        resolve();
      };
      socket.once("end", done);
      socket.once("close", done);
    });
    // A reset after the server closed is the end of the connection here, not a failure.
    socket.on("error", () => undefined);
  }

  /** Opens a connection to the host and port of `baseUrl`. */
  static open(baseUrl: string): Promise<RawConnection> {
    const url = new URL(baseUrl);
    return new Promise((resolve, reject) => {
      const socket = connect({ host: url.hostname, port: Number(url.port) }, () => {
        socket.off("error", reject);
        resolve(new RawConnection(socket));
      });
      socket.once("error", reject);
    });
  }

  /** Whether the server has closed its side. */
  get ended(): boolean {
    return this.#ended;
  }

  write(text: string): void {
    this.#socket.write(text);
  }

  destroy(): void {
    this.#socket.destroy();
  }

  /** The next answer on the connection; fails when the connection ends before a whole answer. */
  async read(): Promise<WireResponse> {
    const headEnd = await this.#until(() => {
      const at = this.#buffer.indexOf(HEAD_END);
      return at >= 0 ? at : undefined;
    }, "the head of an answer");
    const [statusLine = "", ...lines] = this.#buffer.subarray(0, headEnd).toString("latin1").split("\r\n");
    const [version = "", status = ""] = statusLine.split(" ");
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    this.#buffer = this.#buffer.subarray(headEnd + HEAD_END.length);
    const body = headers["content-length"] !== undefined
      ? await this.#take(Number(headers["content-length"]))
      : /chunked/i.test(headers["transfer-encoding"] ?? "")
        ? await this.#chunks()
        : await this.#rest();
    return { version, status: Number(status), headers, body };
  }

  /** Bytes already received and not yet read as an answer. */
  get unread(): string {
    return this.#buffer.toString("utf8");
  }

  async #take(length: number): Promise<string> {
    await this.#until(() => (this.#buffer.length >= length ? true : undefined), `a body of ${length} bytes`);
    const body = this.#buffer.subarray(0, length).toString("utf8");
    this.#buffer = this.#buffer.subarray(length);
    return body;
  }

  async #chunks(): Promise<string> {
    const parts: Buffer[] = [];
    for (;;) {
      const lineEnd = await this.#until(() => {
        const at = this.#buffer.indexOf("\r\n");
        return at >= 0 ? at : undefined;
      }, "a chunk size");
      const size = Number.parseInt(this.#buffer.subarray(0, lineEnd).toString("latin1"), 16);
      await this.#until(() => (this.#buffer.length >= lineEnd + 2 + size + 2 ? true : undefined), "a chunk");
      parts.push(this.#buffer.subarray(lineEnd + 2, lineEnd + 2 + size));
      this.#buffer = this.#buffer.subarray(lineEnd + 2 + size + 2);
      if (size === 0) return Buffer.concat(parts).toString("utf8");
    }
  }

  async #rest(): Promise<string> {
    await this.closed;
    const body = this.#buffer.toString("utf8");
    this.#buffer = Buffer.alloc(0);
    return body;
  }

  /** Waits until `ready` answers something other than undefined, or fails once the connection ended without it. */
  async #until<T>(ready: () => T | undefined, what: string): Promise<T> {
    for (;;) {
      const value = ready();
      if (value !== undefined) return value;
      if (this.#ended) throw new Error(`The connection ended before ${what} (received: ${JSON.stringify(this.unread.slice(0, 300))})`);
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}

/** A request's bytes: `headers` in order, a JSON `body` with its Content-Length. */
export function requestText(method: string, path: string, options: { version?: "1.0" | "1.1"; headers?: Record<string, string>; body?: unknown } = {}): string {
  const body = options.body === undefined ? undefined : typeof options.body === "string" ? options.body : JSON.stringify(options.body);
  const headers: Record<string, string> = {
    ...(options.version === "1.0" ? {} : { host: "127.0.0.1" }),
    ...(body === undefined ? {} : { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) }),
    ...options.headers,
  };
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("");
  return `${method} ${path} HTTP/${options.version ?? "1.1"}\r\n${head}\r\n${body ?? ""}`;
}
