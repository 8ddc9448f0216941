import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import express from "express";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { requestLog } from "../../server/toolkit/http/request-log.ts";
import { httpSerializers } from "../../server/toolkit/logger.ts";
import { until } from "../support/wait.ts";

// The request log middleware on its own, in a bare Express app: which lines it writes at which
// level, and that it makes nothing for a line whose level is off.
const servers: { close: () => void }[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

async function start(level: pino.Level) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const log = pino({ level, serializers: httpSerializers }, sink);
  let children = 0;
  const child = log.child.bind(log);
  log.child = ((...args: Parameters<typeof child>) => (children++, child(...args))) as typeof log.child;
  const app = express();
  app.use(requestLog(app, log));
  // The request log writes its line when the response closes, which may be after the client has the
  // answer. A listener added after its own is called after it: once it counts every response closed,
  // every line is written.
  let opened = 0;
  let closed = 0;
  app.use((_req, res, next) => {
    opened++;
    res.on("close", () => closed++);
    next();
  });
  app.get("/ok", (_req, res) => res.json({ ok: true }));
  app.get("/logs", (req, res) => {
    req.log.info("from the handler");
    res.json({ ok: true });
  });
  app.get("/missing", (_req, res) => res.status(404).json({ error: { code: "not_found" } }));
  const server = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  servers.push(server);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const settle = () => until("every response closed on the server", () => opened > 0 && closed === opened, 10_000);
  return { url, lines, children: () => children, settle };
}

describe("request log", () => {
  it("echoes a safe X-Request-Id and replaces an unsafe one", async () => {
    const { url } = await start("info");
    expect((await fetch(`${url}/ok`, { headers: { "x-request-id": "abc.123:x-y" } })).headers.get("x-request-id")).toBe("abc.123:x-y");
    const replaced = (await fetch(`${url}/ok`, { headers: { "x-request-id": "no spaces <allowed>" } })).headers.get("x-request-id");
    expect(replaced).toMatch(/^[0-9a-f-]{36}$/);
    expect((await fetch(`${url}/ok`)).headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("writes nothing and makes no logger for a success when debug is off", async () => {
    const { url, lines, children, settle } = await start("info");
    await (await fetch(`${url}/ok`)).arrayBuffer();
    await settle();
    expect(lines).toEqual([]);
    expect(children()).toBe(0);
  });

  it("logs a refusal at info as one line without a stack", async () => {
    const { url, lines, settle } = await start("info");
    await (await fetch(`${url}/missing`, { headers: { "x-request-id": "refused-1" } })).arrayBuffer();
    await settle();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 30, reqId: "refused-1", req: { method: "GET", url: "/missing" }, res: { statusCode: 404 }, msg: "request completed" });
    expect(lines[0]!.err).toBeUndefined();
    expect(typeof lines[0]!.responseTime).toBe("number");
  });

  it("logs a success at debug when debug is on", async () => {
    const { url, lines, settle } = await start("debug");
    await (await fetch(`${url}/ok`, { headers: { "x-request-id": "fine-1" } })).arrayBuffer();
    await settle();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 20, reqId: "fine-1", res: { statusCode: 200 } });
  });

  it("gives handlers a logger that carries the request id", async () => {
    const { url, lines, settle } = await start("info");
    await (await fetch(`${url}/logs`, { headers: { "x-request-id": "handler-1" } })).arrayBuffer();
    await settle();
    expect(lines).toEqual([expect.objectContaining({ reqId: "handler-1", msg: "from the handler" })]);
  });
});
