import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  headers: IncomingHttpHeaders;
  raw: string;
  at: number;
}

export type Behaviour = (req: Received) => { status: number; delayMs?: number; headers?: Record<string, string> };

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Changes how the next requests are answered. */
  behave: (next: Behaviour) => void;
  close: () => Promise<void>;
}

/** A webhook receiver on loopback that records every request (raw body and headers). */
export async function startReceiver(behaviour: Behaviour = () => ({ status: 200 }), port = 0): Promise<Receiver> {
  const received: Received[] = [];
  let current = behaviour;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const entry = { headers: req.headers, raw: Buffer.concat(chunks).toString("utf8"), at: Date.now() };
      received.push(entry);
      const answer = current(entry);
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(answer.status, answer.headers ?? {});
        res.end("ok");
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs).unref();
      else send();
    });
  });
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const actual = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${actual}/hooks`,
    port: actual,
    received,
    behave: (next) => (current = next),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
