// The same fixed answers as bare-server.ts, through Express 5 with its JSON body parser and nothing
// else: the ceiling any Express service can reach, printed by `npm run bench:http` for context.
import express from "express";
import type { AddressInfo } from "node:net";
import type { Route } from "./routes.ts";


const app = express();
app.disable("x-powered-by");
app.set("etag", false);
app.use(express.json());
for (const route of JSON.parse(process.env.BARE_ROUTES ?? "[]") as Route[]) {
  app[route.method.toLowerCase() as "get" | "post"](route.path, (_req, res) => {
    res.status(route.status).type(route.contentType).send(route.body);
  });
}
const server = app.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  process.stdout.write(`listening on ${(server.address() as AddressInfo).port}\n`);
});
server.keepAliveTimeout = 5_000;
process.on("SIGTERM", () => server.close(() => process.exit(0)));
