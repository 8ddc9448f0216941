import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorDialects } from "../../server/app.ts";
import { loadConfig } from "../../server/toolkit/config.ts";
import { bindServer } from "../../server/toolkit/http/listener.ts";
import { createConversation, createPersona } from "../support/chat.ts";
import { parseSse } from "../support/sse.ts";
import { sendRaw } from "../support/raw.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { RawConnection, requestText, type WireResponse } from "./raw-connection.ts";

// The HTTP wire as clients use it, byte for byte over node:net (issue 35, item 1; ADR 0305):
// `Connection: close` honoured on JSON answers and on streams, a connection reused after a stream,
// HTTP/1.0, pipelined requests, and the refusals given below the router (a malformed request, a
// body that never arrives, an unknown path, the rate limit, 503 while starting) in OpenAI's error
// shape under /openai/v1. The streams come from a persona on the offline model.
let service: TestService;
let alice: TestUser;
let nova: { id: string };
let conversationId: string;

beforeAll(async () => {
  service = await startTestService();
  alice = await registerUser(service);
  nova = await createPersona(service, alice);
  conversationId = (await createConversation(service, alice, nova.id)).id;
});

afterAll(async () => {
  await service?.close();
});

type Headers = Record<string, string>;
const me = (headers: Headers = {}) => requestText("GET", "/v1/auth/me", { headers: { ...alice.auth, ...headers } });
const models = (headers: Headers = {}) => requestText("GET", "/openai/v1/models", { headers: { ...alice.auth, ...headers } });
const openaiStream = (headers: Headers = {}) =>
  requestText("POST", "/openai/v1/chat/completions", { headers: { ...alice.auth, ...headers }, body: { model: nova.id, stream: true, messages: [{ role: "user", content: "Hello there" }] } });
const nativeStream = (headers: Headers = {}) =>
  requestText("POST", `/v1/conversations/${conversationId}/messages/stream`, { headers: { ...alice.auth, ...headers }, body: { content: "Hello there" } });

/** Both kinds of stream, each with the check that its body is whole. */
const streams = [
  { name: "a native chat stream", request: nativeStream, whole: (body: string) => expect(parseSse(body).events.at(-1)?.event).toBe("done") },
  { name: "an OpenAI-compatible stream", request: openaiStream, whole: (body: string) => expect(parseSse(body).events.at(-1)?.data).toBe("[DONE]") },
];

const open = () => RawConnection.open(service.url);

function expectStream(answer: WireResponse) {
  expect(answer.status, answer.body).toBe(200);
  expect(answer.headers["content-type"]).toMatch(/^text\/event-stream/);
}

/** An answer in OpenAI's error shape (server/areas/openai/errors.ts) and nothing else. */
function expectOpenAIError(status: number, actualStatus: number, body: unknown) {
  expect(actualStatus, JSON.stringify(body)).toBe(status);
  expect(body).toEqual({ error: { message: expect.any(String), type: expect.any(String), param: null, code: expect.any(String) } });
  return (body as { error: { message: string; type: string; code: string } }).error;
}

describe("Connection: close", () => {
  it("is honoured on a JSON answer: the answer says close and the service closes the connection", async () => {
    const connection = await open();
    connection.write(me({ connection: "close" }));
    const answer = await connection.read();
    expect(answer.status).toBe(200);
    expect(answer.headers.connection).toBe("close");
    await connection.closed;
    expect(connection.unread).toBe("");
  });

  for (const stream of streams) {
    it(`is honoured on ${stream.name}: the whole stream, then the connection closes`, async () => {
      const connection = await open();
      connection.write(stream.request({ connection: "close" }));
      const answer = await connection.read();
      expectStream(answer);
      expect(answer.headers.connection).toBe("close");
      stream.whole(answer.body);
      await connection.closed;
    });
  }

  it("a client that sends its next request on that socket all the same gets no parse error, only the closed connection", async () => {
    // curl --next, node-fetch@2: `Connection: close` sent, the socket kept and reused.
    const connection = await open();
    connection.write(openaiStream({ connection: "close" }));
    expectStream(await connection.read());
    connection.write(models());
    await connection.closed;
    expect(connection.unread).toBe("");
  });

  it("a request pipelined after one that said close is not processed (RFC 9112 9.6): the first is answered whole", async () => {
    const connection = await open();
    connection.write(openaiStream({ connection: "close" }) + models());
    const answer = await connection.read();
    expectStream(answer);
    streams[1]!.whole(answer.body);
    await connection.closed;
    expect(connection.unread).toBe("");
  });
});

describe("a reused connection", () => {
  it("answers the next request after a native stream and after an OpenAI-compatible stream", async () => {
    const connection = await open();
    for (const stream of streams) {
      connection.write(stream.request());
      const answer = await connection.read();
      expectStream(answer);
      expect(answer.headers.connection).toBe("keep-alive");
      stream.whole(answer.body);
      connection.write(models());
      const next = await connection.read();
      expect(next.status, next.body).toBe(200);
      expect(JSON.parse(next.body)).toMatchObject({ object: "list" });
    }
    expect(connection.ended).toBe(false);
    connection.destroy();
  });
});

describe("HTTP/1.0", () => {
  it("closes the connection after a JSON answer when keep-alive was not asked", async () => {
    const connection = await open();
    connection.write(requestText("GET", "/v1/auth/me", { version: "1.0", headers: alice.auth }));
    const answer = await connection.read();
    expect(answer.status).toBe(200);
    expect(answer.headers.connection).toBe("close");
    expect(JSON.parse(answer.body)).toMatchObject({ id: alice.id });
    await connection.closed;
  });

  it("sends a stream unchunked, ended by the end of the connection", async () => {
    const connection = await open();
    connection.write(requestText("POST", "/openai/v1/chat/completions", {
      version: "1.0",
      headers: alice.auth,
      body: { model: nova.id, stream: true, messages: [{ role: "user", content: "Hello there" }] },
    }));
    const answer = await connection.read();
    expectStream(answer);
    expect(answer.headers["transfer-encoding"]).toBeUndefined();
    expect(answer.headers.connection).toBe("close");
    streams[1]!.whole(answer.body);
  });

  it("keeps the connection for the next request when the client asked for keep-alive", async () => {
    const connection = await open();
    connection.write(requestText("GET", "/v1/auth/me", { version: "1.0", headers: { ...alice.auth, connection: "keep-alive" } }));
    const first = await connection.read();
    expect(first.status).toBe(200);
    expect(first.headers.connection).toBe("keep-alive");
    connection.write(requestText("GET", "/openai/v1/models", { version: "1.0", headers: alice.auth }));
    const second = await connection.read();
    expect(second.status).toBe(200);
    expect(JSON.parse(second.body)).toMatchObject({ object: "list" });
    await connection.closed;
  });
});

describe("pipelined requests", () => {
  it("are answered in order", async () => {
    const connection = await open();
    connection.write(models() + me() + models({ connection: "close" }));
    const answers = [await connection.read(), await connection.read(), await connection.read()];
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
    expect(JSON.parse(answers[0]!.body)).toMatchObject({ object: "list" });
    expect(JSON.parse(answers[1]!.body)).toMatchObject({ id: alice.id });
    expect(JSON.parse(answers[2]!.body)).toMatchObject({ object: "list" });
    await connection.closed;
  });

  it("a request behind a stream is answered once the stream has ended", async () => {
    const connection = await open();
    connection.write(openaiStream() + nativeStream() + me());
    const first = await connection.read();
    expectStream(first);
    streams[1]!.whole(first.body);
    const second = await connection.read();
    expectStream(second);
    streams[0]!.whole(second.body);
    const third = await connection.read();
    expect(JSON.parse(third.body)).toMatchObject({ id: alice.id });
    connection.destroy();
  });
});

describe("a malformed request", () => {
  const badHeader = (path: string) => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nThis is no header\r\n\r\n`;

  it("is answered 400 in OpenAI's shape under /openai/v1, in the envelope elsewhere, and its connection closed", async () => {
    const openai = await open();
    openai.write(badHeader("/openai/v1/models"));
    const answer = await openai.read();
    expect(answer.headers.connection).toBe("close");
    expect(expectOpenAIError(400, answer.status, JSON.parse(answer.body))).toMatchObject({ type: "invalid_request_error", code: "invalid_request" });
    await openai.closed;

    const native = await open();
    native.write(badHeader("/v1/auth/me"));
    const envelope = await native.read();
    expect(envelope.status).toBe(400);
    expect(JSON.parse(envelope.body)).toEqual({ error: { code: "invalid_request", message: "The HTTP request is malformed" } });
    await native.closed;
  });

  it("with headers over 16 KB is answered 431 in OpenAI's shape under /openai/v1", async () => {
    const connection = await open();
    connection.write(`GET /openai/v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ${"a".repeat(20_000)}\r\n\r\n`);
    const answer = await connection.read();
    expectOpenAIError(431, answer.status, JSON.parse(answer.body));
    await connection.closed;
  });

  it("behind a stream on the same connection is answered after the whole stream, never inside it", async () => {
    const connection = await open();
    connection.write(openaiStream() + badHeader("/openai/v1/models"));
    const first = await connection.read();
    expectStream(first);
    streams[1]!.whole(first.body);
    const second = await connection.read();
    expectOpenAIError(400, second.status, JSON.parse(second.body));
    await connection.closed;
  });
});

describe("refusals below the router under /openai/v1", () => {
  it("an unknown path, a body that is not JSON and a body over the limit are in OpenAI's shape", async () => {
    const unknown = await service.fetch("/openai/v1/no-such-thing", { headers: alice.auth });
    expectOpenAIError(404, unknown.status, await unknown.json());
    const notJson = await sendRaw(service, "POST", "/openai/v1/chat/completions", { body: "{not json", headers: alice.auth });
    expectOpenAIError(400, notJson.status, await notJson.json());
    const large = await sendRaw(service, "POST", "/openai/v1/chat/completions", { body: JSON.stringify({ model: nova.id, messages: [{ role: "user", content: "x".repeat(1_100_000) }] }), headers: alice.auth });
    expectOpenAIError(413, large.status, await large.json());
  });

  it("503 while the service starts is in OpenAI's shape under /openai/v1, in the envelope elsewhere", async () => {
    const bound = await bindServer({ ...loadConfig({ PORT: "0" }), shutdownIdleGraceMs: 0 });
    bound.answerErrorsAs(errorDialects);
    try {
      const openai = await fetch(`${bound.url}/openai/v1/models`);
      expect(openai.headers.get("retry-after")).toBe("1");
      expect(expectOpenAIError(503, openai.status, await openai.json()).code).toBe("service_unavailable");
      const native = await fetch(`${bound.url}/v1/auth/me`);
      expect(native.status).toBe(503);
      expect(await native.json()).toEqual({ error: { code: "service_unavailable", message: "The service is starting" } });
    } finally {
      await bound.drain(0);
    }
  });

  describe("with a short body deadline and a low rate limit", () => {
    let strict: TestService;
    let bob: TestUser;

    beforeAll(async () => {
      strict = await startTestService({ env: { BODY_TIMEOUT_MS: "1000", RATE_LIMIT_PER_MINUTE: "5" } });
      bob = await registerUser(strict);
    });

    afterAll(async () => {
      await strict?.close();
    });

    it("a body that does not arrive in time is answered 408 in OpenAI's shape and its connection closed", async () => {
      const connection = await RawConnection.open(strict.url);
      connection.write(`POST /openai/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${bob.auth.authorization}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"model":`);
      const answer = await connection.read();
      expect(answer.headers.connection).toBe("close");
      expectOpenAIError(408, answer.status, JSON.parse(answer.body));
      await connection.closed;
    });

    it("the rate limit's 429 is in OpenAI's shape, with Retry-After", async () => {
      // Anonymous calls count against the client's address: the registration took one already.
      let answer: Response | undefined;
      for (let attempt = 0; attempt < 10 && answer?.status !== 429; attempt++) answer = await strict.fetch("/openai/v1/models");
      expect(answer!.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(expectOpenAIError(429, answer!.status, await answer!.json())).toMatchObject({ type: "rate_limit_error", code: "rate_limit_exceeded" });
    });
  });
});
