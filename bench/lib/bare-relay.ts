// A bare streaming relay: node:http, and fetch to the upstream, with no database, checks or events.
// `npm run bench:chat` prints what it adds to the first delta next to what Persona adds, as the
// floor of any service that relays a stream on this machine (a process hop each way).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

const upstream = process.env.UPSTREAM_URL ?? "";
const server = createServer((req, res) => {
  if (req.url === "/healthz") return void res.end("ok");
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", async () => {
    const { content } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { content: string };
    const answer = await fetch(`${upstream}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer bench" },
      body: JSON.stringify({ model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content }] }),
    });
    res.writeHead(200, { "content-type": "text/event-stream" });
    for await (const chunk of answer.body as unknown as AsyncIterable<Uint8Array>) res.write(chunk);
    res.end();
  });
});
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  process.stdout.write(`listening on ${(server.address() as AddressInfo).port}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
