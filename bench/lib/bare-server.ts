// A bare node:http server answering fixed JSON bodies: the baseline `npm run bench:http` compares
// Persona against. Routes come from BARE_ROUTES (JSON list of {method, path, status, body}); the
// body of a request is read in full (and JSON-parsed) before answering, as Persona's parser does.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Route } from "./routes.ts";


const routes = new Map<string, Route>();
for (const route of JSON.parse(process.env.BARE_ROUTES ?? "[]") as Route[]) routes.set(`${route.method} ${route.path}`, route);

const notFound = JSON.stringify({ error: { code: "not_found", message: "No such route" } });

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    if (chunks.length) {
      try {
        JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        // the baseline only mirrors the work of parsing; a bad body still gets the route's answer
      }
    }
    const route = routes.get(`${req.method} ${(req.url ?? "/").split("?")[0]}`);
    const body = route ? route.body : notFound;
    res.writeHead(route ? route.status : 404, {
      "Content-Type": route ? route.contentType : "application/json; charset=utf-8",
      "Content-Length": Buffer.byteLength(body),
    });
    res.end(body);
  });
});
server.keepAliveTimeout = 5_000;

server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`bare server listening on ${port}\n`);
});

const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
