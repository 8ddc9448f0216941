// `npm run mock`: the Prism mock of the contract, behind a small front that reads an OpenAI
// client's `stream: true` as the service does.
//
// Prism picks an answer's media type from the `Accept` header alone. The service answers
// `/openai/v1/chat/completions` and `/openai/v1/responses` with an event stream when the body says
// `stream: true`, whatever `Accept` says, and the `openai` packages send `Accept: application/json`
// on streamed calls too; against Prism alone they got the blocking JSON and read no chunk (issue 35,
// item 8). The front asks Prism for the event stream when the body asks for one, and passes
// everything else through unchanged, Prism's CORS answers included.
import { spawn } from "node:child_process";
import { createServer, request as forward, type IncomingMessage, type ServerResponse } from "node:http";
import { once } from "node:events";
import { createServer as netServer } from "node:net";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const host = process.env.MOCK_HOST ?? "127.0.0.1";
const port = Number(process.env.MOCK_PORT ?? 4010);
// Bodies the front reads to find `stream`; larger ones pass through as they are.
const MAX_READ = 1024 * 1024;
const STREAMED_BY_BODY = new Set(["/openai/v1/chat/completions", "/openai/v1/responses"]);

const prismPort = await freePort();
const prism = spawn(join(root, "node_modules", ".bin", "prism"), ["mock", join(root, "generated", "openapi.yaml"), "--host", "127.0.0.1", "--port", String(prismPort)], {
  stdio: "inherit",
});
prism.on("exit", (code) => process.exit(code ?? 1));
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => prism.kill(signal));

const server = createServer((req, res) => {
  void relay(req, res).catch((error: unknown) => {
    if (!res.headersSent) res.writeHead(502, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { code: "upstream_error", message: `The mock did not answer: ${String(error)}` } }));
  });
});
server.listen(port, host, () => console.log(`mock: http://${host}:${port} (Prism on 127.0.0.1:${prismPort})`));

async function relay(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? "/").split("?")[0]!;
  const body = req.method === "POST" && STREAMED_BY_BODY.has(path) ? await readBody(req) : undefined;
  const headers = { ...req.headers };
  if (body && asksForStream(body)) headers.accept = "text/event-stream";
  const upstream = forward({ host: "127.0.0.1", port: prismPort, method: req.method, path: req.url, headers }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  upstream.on("error", (error) => res.destroy(error));
  if (body) upstream.end(body);
  else req.pipe(upstream);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of req as AsyncIterable<Buffer>) {
    parts.push(part);
    size += part.length;
  }
  return Buffer.concat(parts, size);
}

function asksForStream(body: Buffer): boolean {
  if (body.length > MAX_READ) return false;
  try {
    return (JSON.parse(body.toString("utf8")) as { stream?: unknown }).stream === true;
  } catch {
    return false;
  }
}

async function freePort(): Promise<number> {
  const probe = netServer().listen(0, "127.0.0.1");
  await once(probe, "listening");
  const { port: free } = probe.address() as { port: number };
  probe.close();
  return free;
}
