import { connect, createServer, type Socket } from "node:net";

export interface TcpProxy {
  url: string;
  /** Cuts every open connection, as a network failure or a load balancer would. */
  dropAll: () => void;
  /** While true, new connections are cut as soon as they open. */
  refusing: boolean;
  close: () => Promise<void>;
}

/** A loopback TCP proxy in front of `target` (a URL), whose connections the test can cut. */
export async function tcpProxy(target: string): Promise<TcpProxy> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  const proxy: TcpProxy = {
    url: "",
    refusing: false,
    dropAll: () => {
      for (const socket of sockets) socket.destroy();
      sockets.clear();
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server = createServer((client) => {
    if (proxy.refusing) {
      client.destroy();
      return;
    }
    const upstream = connect(Number(port), hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as { port: number };
  proxy.url = `http://127.0.0.1:${address.port}`;
  const close = proxy.close;
  proxy.close = async () => {
    proxy.dropAll();
    await close();
  };
  return proxy;
}
