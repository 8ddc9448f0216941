// `.withResponse()` and the metadata of answers, against a loopback server that sends exactly the
// headers each case needs (the real service's are in with-response.test.ts).
import { afterEach, describe, expect, test } from "vitest";
import { APIPromise, createClient, NotFoundError, PageIterator, RateLimitError, StreamError, type PersonaClient, type ResponseMeta } from "../../sdk/src/index.ts";
import { errorBody, json, startFakeServer, type FakeServer } from "./fake-server.ts";

const me = { id: "u1", email: "a@example.com", username: "a", display_name: null, avatar_url: null, bio: null, email_verified: false, plan: "free", created_at: "2026-01-01T00:00:00Z", updated_at: "2026-01-01T00:00:00Z" };
const rateHeaders = { "x-ratelimit-limit": "600", "x-ratelimit-remaining": "599", "x-ratelimit-reset": "1795000060" };
const frame = (event: string, data: unknown, id?: string) => `${id ? `id: ${id}\n` : ""}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function clientFor(handler: Parameters<typeof startFakeServer>[0], options: { maxRetries?: number } = {}): Promise<PersonaClient> {
  server = await startFakeServer(handler);
  return createClient({ baseUrl: server.url, apiKey: "pk_test" }, options);
}

describe("withResponse() on a call", () => {
  test("gives the data with the Response, the request id and the rate-limit state; the request goes out once", async () => {
    const client = await clientFor((_req, res) => json(res, 200, me, { "x-request-id": "req-1", ...rateHeaders }));
    const call = client.auth.me();
    expect(call).toBeInstanceOf(APIPromise);
    expect(call).toBeInstanceOf(Promise);
    const [data, first, second] = await Promise.all([call, call.withResponse(), call.withResponse()]);
    expect(data).toEqual(me);
    expect(first.data).toBe(data);
    expect(second.data).toBe(data);
    expect(first.response.status).toBe(200);
    expect(first.response.headers.get("content-type")).toBe("application/json");
    expect(first.requestId).toBe("req-1");
    expect(first.rateLimit).toEqual({ limit: 600, remaining: 599, resetAt: new Date(1_795_000_060_000) });
    expect(server!.requests).toHaveLength(1);
  });

  test("is still an ordinary promise: then, catch, finally, Promise.resolve and async functions", async () => {
    const client = await clientFor((_req, res) => json(res, 200, me));
    const call = client.auth.me();
    expect(await call.then((user) => user.id)).toBe("u1");
    expect(await call.catch(() => "unreached")).toEqual(me);
    let settled = false;
    expect(await call.finally(() => (settled = true))).toEqual(me);
    expect(settled).toBe(true);
    expect(await Promise.resolve(call)).toEqual(me);
    const viaAsync = async () => call;
    expect(await viaAsync()).toEqual(me);
    expect(server!.requests).toHaveLength(1);
  });

  test.each([
    ["no rate-limit headers", {}],
    ["only two of the three", { "x-ratelimit-limit": "600", "x-ratelimit-remaining": "599" }],
    ["a limit that is not a number", { ...rateHeaders, "x-ratelimit-limit": "lots" }],
    ["a negative remaining count", { ...rateHeaders, "x-ratelimit-remaining": "-1" }],
    ["a fractional reset", { ...rateHeaders, "x-ratelimit-reset": "1795000060.5" }],
    ["an empty limit", { ...rateHeaders, "x-ratelimit-limit": "" }],
    ["the IETF draft's names instead", { "ratelimit-limit": "600", "ratelimit-remaining": "599", "ratelimit-reset": "60" }],
  ])("%s: rateLimit is undefined, the data and the Response are there", async (_name, headers: Record<string, string>) => {
    const client = await clientFor((_req, res) => json(res, 200, me, headers));
    const { data, response, requestId, rateLimit } = await client.auth.me().withResponse();
    expect(data).toEqual(me);
    expect(response.status).toBe(200);
    expect(rateLimit).toBeUndefined();
    expect(requestId).toBeUndefined();
  });

  test("rate-limit values padded with spaces, and a window that has run out, are read", async () => {
    const client = await clientFor((_req, res) => json(res, 200, me, { "x-ratelimit-limit": " 10 ", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "0" }));
    expect((await client.auth.me().withResponse()).rateLimit).toEqual({ limit: 10, remaining: 0, resetAt: new Date(0) });
  });

  test("an error answer rejects withResponse() like the call, and the typed error carries the same metadata", async () => {
    // A Retry-After above a minute is not waited out: the 429 reaches the caller at once.
    const client = await clientFor((_req, res) =>
      json(res, 429, errorBody("rate_limited", "slow down"), { "retry-after": "120", "x-request-id": "req-429", ...rateHeaders, "x-ratelimit-remaining": "0" }),
    );
    const call = client.auth.me();
    const [awaited, withResponse] = await Promise.all([call.catch((e: unknown) => e), call.withResponse().catch((e: unknown) => e)]);
    expect(withResponse).toBe(awaited);
    expect(awaited).toBeInstanceOf(RateLimitError);
    const error = awaited as RateLimitError;
    expect(error.retryAfter).toBe(120);
    expect(error.requestId).toBe("req-429");
    expect(error.rateLimit).toEqual({ limit: 600, remaining: 0, resetAt: new Date(1_795_000_060_000) });
    expect(server!.requests).toHaveLength(1);
  });

  test("after a retry, the answer is the last attempt's", async () => {
    const client = await clientFor((_req, res, i) =>
      i === 0 ? json(res, 503, errorBody("provider_unavailable"), { "retry-after": "0", "x-request-id": "first" }) : json(res, 200, me, { "x-request-id": "second" }),
    );
    const { response, requestId } = await client.auth.me().withResponse();
    expect(response.status).toBe(200);
    expect(requestId).toBe("second");
    expect(server!.requests).toHaveLength(2);
  });

  test("bytes, an answer without content and an upload carry it too", async () => {
    const client = await clientFor((req, res) => {
      if (req.url === "/v1/voice/tts") {
        res.writeHead(200, { "content-type": "audio/mpeg", "x-request-id": "tts" });
        res.end(Buffer.from([0xff, 0xfb, 0x90, 0x00]));
      } else if (req.method === "DELETE") {
        res.writeHead(204, { "x-request-id": "unfollow" });
        res.end();
      } else {
        json(res, 201, { id: "d1", filename: "guide.md", status: "processing" }, { "x-request-id": "upload" });
      }
    });
    const speech = await client.voice.tts({ text: "Hi" }).withResponse();
    expect(speech.data).toEqual(new Uint8Array([0xff, 0xfb, 0x90, 0x00]));
    expect(speech.response.headers.get("content-type")).toBe("audio/mpeg");
    expect(speech.requestId).toBe("tts");

    const unfollowed = await client.social.unfollow("u2").withResponse();
    expect(unfollowed.data).toBeUndefined();
    expect(unfollowed.response.status).toBe(204);
    expect(unfollowed.requestId).toBe("unfollow");

    const uploaded = await client.knowledge.upload("p1", new Blob(["# Notes"]), { filename: "notes.md" }).withResponse();
    expect(uploaded.data).toMatchObject({ id: "d1" });
    expect(uploaded.response.status).toBe(201);
    expect(uploaded.requestId).toBe("upload");
    expect(server!.requests.at(-1)!.headers["content-type"]).toMatch(/^multipart\/form-data/);
  });
});

describe("withResponse() on lists and streams", () => {
  test("a list gives its first page's answer, fetched once whether it is awaited, asked or iterated", async () => {
    const client = await clientFor((req, res, i) => {
      const offset = Number(new URL(req.url, "http://x").searchParams.get("offset") ?? 0);
      json(res, 200, { data: [{ id: `p${offset}` }], total: 2, limit: 1, offset }, { "x-request-id": `page-${i}`, ...rateHeaders });
    });
    const list = client.personas.list({ limit: 1 });
    expect(list).toBeInstanceOf(PageIterator);
    const first = await list.withResponse();
    expect(first.data).toMatchObject({ data: [{ id: "p0" }], offset: 0 });
    expect(first.requestId).toBe("page-0");
    expect(first.rateLimit?.remaining).toBe(599);
    expect(await list).toBe(first.data);
    expect((await list.toArray()).map((p) => p.id)).toEqual(["p0", "p1"]);
    expect(server!.requests).toHaveLength(2);
  });

  test("a chat stream gives its opening answer as soon as the headers arrive, then reads on", async () => {
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const client = await clientFor(async (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream", "x-request-id": "chat-1", ...rateHeaders });
      res.flushHeaders();
      // Nothing of the body until the test has its answer: withResponse() must not wait for events.
      await released;
      res.end(`${frame("start", { generation_id: "g1" }, "1")}${frame("delta", { content: "Hel" }, "2")}${frame("delta", { content: "lo" }, "3")}${frame("done", { message_id: "m1" }, "4")}`);
    });
    const stream = client.conversations.stream("c1", { content: "Hi" });
    const { data, response, requestId, rateLimit } = await stream.withResponse();
    expect(data).toBe(stream);
    expect(response.status).toBe(200);
    expect(requestId).toBe("chat-1");
    expect(rateLimit?.limit).toBe(600);
    release();
    expect(await data.text()).toBe("Hello");
    expect(data.finalMessageId).toBe("m1");
    expect(server!.requests).toHaveLength(1);
  });

  test("a chat stream the service refuses rejects withResponse() with the typed error, and reading throws it too", async () => {
    const client = await clientFor((_req, res) => json(res, 404, errorBody("not_found", "no such conversation"), { "x-request-id": "chat-404" }));
    const stream = client.conversations.stream("missing", { content: "Hi" });
    const refused = await stream.withResponse().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(NotFoundError);
    expect((refused as NotFoundError).requestId).toBe("chat-404");
    await expect(stream.text()).rejects.toBe(refused);
  });

  test("a chat stream that ends with an error event throws a StreamError naming the request", async () => {
    const client = await clientFor((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream", "x-request-id": "chat-err", ...rateHeaders });
      res.end(`${frame("delta", { content: "Hel" })}${frame("error", { code: "upstream_error", message: "model down" })}`);
    });
    const error = await client.conversations.stream("c1", { content: "Hi" }).text().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StreamError);
    expect((error as StreamError).status).toBeUndefined();
    expect((error as StreamError).requestId).toBe("chat-err");
  });

  test("a room's event stream hands each opening answer to onOpen", async () => {
    const client = await clientFor((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream", "x-request-id": "room-1", ...rateHeaders });
      res.end(frame("closed", { reason: "room_deleted" }));
    });
    const opened: ResponseMeta[] = [];
    const events = [];
    for await (const event of client.rooms.events("r1", { onOpen: (meta) => opened.push(meta) })) events.push(event.type);
    expect(events).toEqual(["closed"]);
    expect(opened).toHaveLength(1);
    expect(opened[0]!.response.status).toBe(200);
    expect(opened[0]!.requestId).toBe("room-1");
    expect(opened[0]!.rateLimit?.remaining).toBe(599);
  });
});
