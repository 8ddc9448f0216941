import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

export interface FakeServer {
  url: string;
  requests: Received[];
  close: () => Promise<void>;
}

/**
 * A tiny HTTP server on loopback for the behaviours the real service cannot be made to show on
 * demand (503s, Retry-After, dropped connections, hand-written event streams). `handle` gets each
 * request with its body already read, and the number of that request (0-based).
 */
export async function startFakeServer(
  handle: (request: Received, response: ServerResponse, index: number) => void | Promise<void>,
): Promise<FakeServer> {
  const requests: Received[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const received = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("latin1") };
    requests.push(received);
    await handle(received, res, requests.length - 1);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Answers JSON with the given status and headers. */
export function json(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { "content-type": "application/json", ...headers });
  response.end(JSON.stringify(body));
}

export const errorBody = (code: string, message = code) => ({ error: { code, message } });
