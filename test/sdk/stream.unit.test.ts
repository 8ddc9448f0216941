// The chat stream against a loopback server that speaks the contract's events by hand.
import type { ServerResponse } from "node:http";
import { afterEach, describe, expect, test, vi } from "vitest";
import {
  ConnectionError,
  createClient,
  NotFoundError,
  PlanLimitError,
  StreamError,
  StreamResumeError,
  TimeoutError,
  type ChatStream,
  type ChatStreamEvent,
} from "../../sdk/src/index.ts";
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

// ------------------------------------------------------------------ resuming (ADR 0307)

describe("resuming after a drop: only a new event id is progress", () => {
  const GENERATION = "0193a6f1-2b2c-7d3e-9f4a-5b6c7d8e9f20";
  const STREAM_PATH = `/v1/conversations/${CONVERSATION}/messages/stream`;
  const RESUME_PATH = `/v1/conversations/${CONVERSATION}/generations/${GENERATION}/stream`;
  const event = (id: number, name: string, data: unknown) => `id: ${id}\nevent: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
  const start = event(1, "start", { generation_id: GENERATION });

  /** What the fake fetch saw: each request's path and `Last-Event-ID`. */
  interface Seen {
    path: string;
    lastEventId: string | null;
  }

  /**
   * A client whose fetch answers every request with `answer(seen, index)` as an event stream; the
   * backoff between reconnections runs on fake timers, so no test waits for it.
   */
  function fakeClient(answer: (seen: Seen, index: number) => ReadableStream<Uint8Array>) {
    const seen: Seen[] = [];
    const fetch = async (request: Request) => {
      const entry = { path: new URL(request.url).pathname, lastEventId: request.headers.get("last-event-id") };
      seen.push(entry);
      return new Response(answer(entry, seen.length - 1), { status: 200, headers: { "content-type": "text/event-stream" } });
    };
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    return { seen, client: createClient({ baseUrl: "http://persona.test", apiKey: "pk_test" }, { fetch, maxRetries: 0 }) };
  }
  afterEach(() => {
    vi.useRealTimers();
  });

  const encoder = new TextEncoder();
  /** A body that sends `text` and ends. */
  const body = (text: string) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode(text));
        controller.close();
      },
    });
  /** A body that sends `text`, then `frame` again and again for as long as it is read. */
  const forever = (text: string, frame: string) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode(text));
      },
      pull(controller) {
        controller.enqueue(encoder.encode(frame));
      },
    });

  /** Awaits `work`, letting fake time pass meanwhile (the backoff); what it gave or threw. */
  async function settle<T>(work: Promise<T>): Promise<{ value?: T; error?: unknown }> {
    let settled = false;
    const outcome = work.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    void outcome.then(() => (settled = true));
    // The backoff is at most 8 s a reconnection; 600 fake seconds bound a loop that never ends.
    for (let step = 0; !settled && step < 600; step++) await vi.advanceTimersByTimeAsync(1_000);
    expect(settled, "the stream ended").toBe(true);
    return outcome;
  }

  /** Reads the whole stream (at most 100 events: a stream that loops fails, not hangs): its events and how it ended. */
  async function readAll(stream: ChatStream): Promise<{ events: ChatStreamEvent[]; error: unknown }> {
    const events: ChatStreamEvent[] = [];
    const { error } = await settle(
      (async () => {
        for await (const item of stream) if (events.push(item) >= 100) break;
      })(),
    );
    return { events, error };
  }

  const contents = (events: ChatStreamEvent[]) => events.flatMap((e) => (e.type === "delta" ? [e.content] : []));

  test("a resume that replays events already handled yields each event once", async () => {
    const { client, seen } = fakeClient((_request, index) =>
      index === 0
        ? body(start + event(2, "delta", { content: "Hel" }) + event(3, "delta", { content: "lo" }))
        : // This service ignores Last-Event-ID and replays the generation from its start.
          body(start + event(2, "delta", { content: "Hel" }) + event(3, "delta", { content: "lo" }) + event(4, "delta", { content: "!" }) + event(5, "done", { message_id: "m1" })),
    );
    const stream = client.conversations.stream(CONVERSATION, { content: "Hi" });
    const { events, error } = await readAll(stream);
    expect(error).toBeUndefined();
    expect(contents(events)).toEqual(["Hel", "lo", "!"]);
    expect(events.at(-1)).toEqual({ type: "done", message_id: "m1" });
    expect(seen).toEqual([
      { path: STREAM_PATH, lastEventId: null },
      { path: RESUME_PATH, lastEventId: "3" },
    ]);
    expect(stream.resumes).toBe(1);
  });

  test("a resume from the right event continues the reply; text() resolves", async () => {
    const { client, seen } = fakeClient((request, index) => {
      if (index === 0) return body(start + event(2, "delta", { content: "Good " }));
      expect(request.lastEventId).toBe("2");
      return body(event(3, "delta", { content: "day" }) + event(4, "done", { message_id: "m2" }));
    });
    const stream = client.conversations.stream(CONVERSATION, { content: "Hi" });
    expect(await settle(stream.text())).toEqual({ value: "Good day" });
    expect(stream.finalMessageId).toBe("m2");
    expect(seen.map((s) => s.path)).toEqual([STREAM_PATH, RESUME_PATH]);
  });

  test("a service that sends the same event forever: yielded once, then StreamResumeError after 5 reconnections", async () => {
    const same = event(2, "delta", { content: "again" });
    const { client, seen } = fakeClient((_request, index) => (index === 0 ? forever(start, same) : forever("", same)));
    const stream = client.conversations.stream(CONVERSATION, { content: "Hi" });
    const { events, error } = await readAll(stream);
    expect(contents(events)).toEqual(["again"]);
    expect(error).toBeInstanceOf(StreamResumeError);
    expect(error).toBeInstanceOf(StreamError);
    const resumeError = error as StreamResumeError;
    expect(resumeError).toMatchObject({ code: "stream_resume_failed", generationId: GENERATION, lastEventId: "2", resumes: 5 });
    expect(resumeError.cause).toBeInstanceOf(ConnectionError);
    expect(resumeError.name).toBe("StreamResumeError");
    expect(stream.resumes).toBe(5);
    expect(seen.slice(1)).toEqual(Array.from({ length: 5 }, () => ({ path: RESUME_PATH, lastEventId: "2" })));
  });

  test("a service that never sends the blank line after its last event: done is never dispatched, the stream gives up", async () => {
    // Every answer lacks the blank line that dispatches its last event, as Prism sent them.
    const events5 = [start, event(2, "delta", { content: "Hel" }), event(3, "delta", { content: "lo" }), event(4, "done", { message_id: "m3" })];
    const cut = (frames: string[]) => body(frames.join("").replace(/\n$/, ""));
    const { client, seen } = fakeClient((request) => cut(events5.slice(Number(request.lastEventId ?? "0"))));
    const stream = client.conversations.stream(CONVERSATION, { content: "Hi" });
    const { events, error } = await readAll(stream);
    expect(contents(events)).toEqual(["Hel", "lo"]);
    expect(error).toBeInstanceOf(StreamResumeError);
    expect(error).toMatchObject({ lastEventId: "3", resumes: 5 });
    expect(seen.slice(1).every((s) => s.path === RESUME_PATH && s.lastEventId === "3")).toBe(true);
    expect(stream.finalMessageId).toBeUndefined();
  });

  test("progress refills the budget: a stream cut after every new event still completes", async () => {
    const words = Array.from({ length: 8 }, (_, i) => `w${i} `);
    const frames = [start, ...words.map((content, i) => event(i + 2, "delta", { content })), event(words.length + 2, "done", { message_id: "m4" })];
    // Each connection repeats the last event handled, adds one new event, and breaks off.
    const { client, seen } = fakeClient((request) => {
      const from = Number(request.lastEventId ?? "0");
      return body(frames.slice(Math.max(0, from - 1), from + 1).join(""));
    });
    const stream = client.conversations.stream(CONVERSATION, { content: "Hi" });
    const { events, error } = await readAll(stream);
    expect(error).toBeUndefined();
    expect(contents(events)).toEqual(words);
    expect(events.at(-1)).toEqual({ type: "done", message_id: "m4" });
    expect(stream.resumes).toBe(frames.length - 1);
    expect(stream.resumes).toBeGreaterThan(5);
    expect(seen).toHaveLength(frames.length);
  });

  test("a drop before the start event is not resumed: ConnectionError", async () => {
    const { client, seen } = fakeClient(() => body(": keep-alive\n\n"));
    const { error } = await readAll(client.conversations.stream(CONVERSATION, { content: "Hi" }));
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).not.toBeInstanceOf(StreamResumeError);
    expect(seen).toHaveLength(1);
  });
});
