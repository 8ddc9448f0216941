// The chat stream against a loopback server that speaks the contract's events by hand.
import type { ServerResponse } from "node:http";
import { afterEach, expect, test } from "vitest";
import { ConnectionError, createClient, NotFoundError, PlanLimitError, StreamError, TimeoutError, type ChatStreamEvent } from "../../sdk/src/index.ts";
import { errorBody, json, startFakeServer, type FakeServer } from "./fake-server.ts";

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const CONVERSATION = "c1";
const sse = (res: ServerResponse) => res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

async function clientFor(handler: Parameters<typeof startFakeServer>[0], options: { timeout?: number } = {}) {
  server = await startFakeServer(handler);
  return createClient({ baseUrl: server.url, accessToken: "a", refreshToken: "r" }, options);
}

test("typed events in order; comment lines and unknown events are skipped; split frames are joined", async () => {
  const client = await clientFor(async (_req, res) => {
    sse(res);
    const body = `: keep-alive\n\n${frame("delta", { content: "Hel" })}event: future\ndata: {}\n\n${frame("delta", { content: "lo" })}${frame("done", { message_id: "m1" })}`;
    // Byte by byte in places, to prove frames that arrive in pieces are reassembled.
    res.write(body.slice(0, 7));
    await new Promise((r) => setTimeout(r, 10));
    res.write(body.slice(7, 30));
    res.end(body.slice(30));
  });
  const stream = client.conversations.stream(CONVERSATION, { content: "Hi" });
  const events: ChatStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  expect(events).toEqual([
    { type: "delta", content: "Hel" },
    { type: "delta", content: "lo" },
    { type: "done", message_id: "m1" },
  ]);
  expect(stream.finalMessageId).toBe("m1");
  const request = server!.requests[0]!;
  expect(request.url).toBe(`/v1/conversations/${CONVERSATION}/messages/stream`);
  expect(request.headers["idempotency-key"]).toBe(stream.idempotencyKey);
  expect(request.headers.authorization).toBe("Bearer a");
  expect(JSON.parse(request.body)).toEqual({ content: "Hi" });
});

test("text() concatenates the reply; an error event makes it throw StreamError", async () => {
  let fail = false;
  const client = await clientFor((_req, res) => {
    sse(res);
    res.end(fail ? frame("delta", { content: "Par" }) + frame("error", { code: "upstream_error", message: "model down" }) : frame("delta", { content: "Good " }) + frame("delta", { content: "day" }) + frame("done", { message_id: "m2" }));
  });
  expect(await client.conversations.stream(CONVERSATION, { content: "x" }).text()).toBe("Good day");
  fail = true;
  const error = await client.conversations.stream(CONVERSATION, { content: "x" }).text().catch((e: unknown) => e);
  expect(error).toBeInstanceOf(StreamError);
  expect((error as StreamError).code).toBe("upstream_error");
  expect((error as StreamError).message).toBe("model down");
});

test("a JSON error before the stream starts is thrown as its typed error", async () => {
  const client = await clientFor((req, res) =>
    req.url!.includes("missing") ? json(res, 404, errorBody("not_found", "Conversation not found"), { "x-request-id": "r-1" }) : json(res, 402, { error: { code: "plan_limit_exceeded", message: "quota", details: { limit: 200, used: 200, plan: "free" } } }),
  );
  const missing = await client.conversations.stream("missing", { content: "x" }).text().catch((e: unknown) => e);
  expect(missing).toBeInstanceOf(NotFoundError);
  expect((missing as NotFoundError).requestId).toBe("r-1");
  const iterator = client.conversations.stream(CONVERSATION, { content: "x" })[Symbol.asyncIterator]();
  const quota = await iterator.next().catch((e: unknown) => e);
  expect(quota).toBeInstanceOf(PlanLimitError);
  expect((quota as PlanLimitError).details).toEqual({ limit: 200, used: 200, plan: "free" });
});

test("abort() ends iteration quietly and closes the connection; text() then refuses a partial reply", async () => {
  let closed: () => void = () => undefined;
  const serverSawClose = new Promise<void>((resolve) => (closed = resolve));
  const client = await clientFor((_req, res) => {
    sse(res);
    res.write(frame("delta", { content: "one" }));
    const timer = setInterval(() => res.write(frame("delta", { content: "more" })), 20);
    res.on("close", () => {
      clearInterval(timer);
      closed();
    });
  });
  const stream = client.conversations.stream(CONVERSATION, { content: "x" });
  const seen: string[] = [];
  for await (const event of stream) {
    if (event.type === "delta") seen.push(event.content);
    if (seen.length === 3) stream.abort();
  }
  expect(seen.length).toBeGreaterThanOrEqual(3);
  expect(stream.finalMessageId).toBeUndefined();
  await serverSawClose;

  const second = client.conversations.stream(CONVERSATION, { content: "x" });
  setTimeout(() => second.abort(), 50);
  await expect(second.text()).rejects.toBeInstanceOf(ConnectionError);
});

test("the caller's signal aborts a stream with its reason", async () => {
  const client = await clientFor((_req, res) => {
    sse(res);
    res.write(frame("delta", { content: "one" }));
  });
  const controller = new AbortController();
  const stream = client.conversations.stream(CONVERSATION, { content: "x" }, { signal: controller.signal });
  const seen: ChatStreamEvent[] = [];
  const reading = (async () => {
    for await (const event of stream) {
      seen.push(event);
      controller.abort(new Error("leaving the page"));
    }
  })();
  await expect(reading).rejects.toThrow("leaving the page");
  expect(seen).toHaveLength(1);
});

test("a stream that ends before done, or falls silent, is a connection error", async () => {
  let silent = false;
  const client = await clientFor((_req, res) => {
    sse(res);
    if (silent) res.write(": keep-alive\n\n");
    else res.end(frame("delta", { content: "cut" }));
  }, { timeout: 200 });
  await expect(client.conversations.stream(CONVERSATION, { content: "x" }).text()).rejects.toBeInstanceOf(ConnectionError);
  silent = true;
  await expect(client.conversations.stream(CONVERSATION, { content: "x" }).text()).rejects.toBeInstanceOf(TimeoutError);
});

test("a stream is read once; breaking out of the loop closes it", async () => {
  const client = await clientFor((_req, res) => {
    sse(res);
    res.end(frame("delta", { content: "a" }) + frame("delta", { content: "b" }) + frame("done", { message_id: "m" }));
  });
  const stream = client.conversations.stream(CONVERSATION, { content: "x" });
  for await (const event of stream) {
    expect(event.type).toBe("delta");
    break;
  }
  await expect(stream.text()).rejects.toThrow("read only once");
});

test("time the caller spends on an event does not count against the stream's timeout", async () => {
  const client = await clientFor(
    async (_req, res) => {
      sse(res);
      for (const piece of ["a", "b", "c"]) {
        res.write(frame("delta", { content: piece }));
        await new Promise((r) => setTimeout(r, 100));
      }
      res.end(frame("done", { message_id: "m3" }));
    },
    { timeout: 400 },
  );
  const pieces: string[] = [];
  for await (const event of client.conversations.stream(CONVERSATION, { content: "x" })) {
    if (event.type === "delta") pieces.push(event.content);
    // A slow consumer: longer than the timeout, on every event.
    await new Promise((r) => setTimeout(r, 600));
  }
  expect(pieces).toEqual(["a", "b", "c"]);
});
