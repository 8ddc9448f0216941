import { createServer, connect, type Socket } from "node:net";

/** A TCP proxy on loopback in front of `target` whose open connections a test can cut (a network drop). */
export interface TcpProxy {
  url: string;
  /** Destroys every connection open now, both ways, as a network failure or a load balancer would. */
  cut(): void;
  /** While true, new connections are cut as soon as they open (the network stays down). */
  refusing: boolean;
  /** Connections accepted so far. */
  readonly connections: number;
  close(): Promise<void>;
}

export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const { hostname, port } = new URL(target);
  const open = new Set<Socket>();
  let connections = 0;
  const cut = () => {
    for (const socket of open) socket.destroy();
    open.clear();
  };
  const server = createServer((client) => {
    connections++;
    if (proxy.refusing) {
      client.destroy();
      return;
    }
    const upstream = connect(Number(port), hostname);
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on("close", () => open.delete(socket));
      socket.on("error", () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as { port: number };
  const proxy: TcpProxy = {
    url: `http://127.0.0.1:${address.port}`,
    cut,
    refusing: false,
    get connections() {
      return connections;
    },
    close: async () => {
      cut();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}
