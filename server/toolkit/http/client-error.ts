import { type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { headersTooLarge, invalidRequest, payloadTooLarge, requestTimeout } from "./error-catalogue.ts";
import { errorAnswer, type ErrorAnswer, type ErrorDialect } from "./error-dialects.ts";
import type { ApiError } from "./errors.ts";

/** Node's limit on the request line plus headers (its --max-http-header-size default). */
export const MAX_HEADER_BYTES = 16 * 1024;

/** What Node's HTTP parser adds to the errors it reports (`prepareError` in Node's `_http_server`). */
interface ParseError extends NodeJS.ErrnoException {
  rawPacket?: unknown;
  bytesParsed?: number;
}

const PENDING = Symbol("answers pending");
const LAST = Symbol("last request");
const REFUSED = Symbol("refused");

/** A client connection as this module keeps it: its answers not yet finished, in order, and its last request. */
type Connection = Duplex & { [PENDING]?: ServerResponse[]; [LAST]?: IncomingMessage; [REFUSED]?: true };

/**
 * Requests Node's HTTP parser refuses before Express sees them (a malformed request, a request line
 * and headers over 16 KB, one that did not arrive within Node's request timeout) would get a bare
 * status with an empty body. They are answered in the error shape of their path (`dialects`, the
 * service's envelope by default) and the connection is closed: the parser cannot go on after an error.
 *
 * A connection may carry several requests, so a refusal waits for the answers of the requests
 * before it on that connection (pipelined, or a stream still running) and is written after them,
 * never into one of them; Node's own handler would write into an answer whose head is not out yet.
 * A request after one that said `Connection: close` (or an HTTP/1.0 one without keep-alive) is not
 * a malformed request: RFC 9112 9.6 says it is not processed, so it gets no answer at all, the
 * earlier answers are completed, and the connection closes after them (issue 35: a client that
 * reuses such a socket read a 400 as the answer to its next request).
 */
export function answerClientErrors(server: Server, dialects: () => readonly ErrorDialect[]): void {
  server.on("request", track);
  server.on("clientError", (error: ParseError, socket: Duplex) => {
    const connection = socket as Connection;
    if (!socket.writable || (error.code === "ECONNRESET" && !socket.readable)) {
      socket.destroy();
      return;
    }
    // The parser stays failed: each further chunk the client sends reports the error again.
    if (connection[REFUSED]) return;
    connection[REFUSED] = true;
    const pending = [...(connection[PENDING] ?? [])];
    if (error.code === "HPE_CLOSED_CONNECTION") {
      afterAll(pending, () => closeQuietly(socket));
      return;
    }
    // An error inside a body is its request's: that request was handed to the app already.
    const last = connection[LAST];
    const own = last && !last.complete ? pending.find((res) => res.req === last) : undefined;
    const before = pending.filter((res) => res !== own);
    const path = own ? own.req.url : failingTarget(error);
    afterAll(before, () => {
      // An answer the app has begun is completed; the connection closes after it.
      if (own?.headersSent) return afterAll([own], () => closeQuietly(socket));
      answerAndClose(socket, errorAnswer(refusalOf(error), path, dialects()));
    });
  });
}

/** Records each request's answer on its connection until the answer is done ('close'). */
function track(req: IncomingMessage, res: ServerResponse): void {
  const connection = req.socket as Connection;
  connection[LAST] = req;
  (connection[PENDING] ??= []).push(res);
  res.on("close", untrack);
}

// One function for every answer: no closure per request. At 'close' the answer has let go of its
// socket already; its request has not.
function untrack(this: ServerResponse): void {
  const pending = (this.req.socket as Connection | null)?.[PENDING];
  const at = pending ? pending.indexOf(this) : -1;
  if (at >= 0) pending!.splice(at, 1);
}

/** Calls `then` once every answer of `responses` is done (at once when there is none). */
function afterAll(responses: readonly ServerResponse[], then: () => void): void {
  let left = responses.length;
  if (left === 0) return then();
  const one = () => {
    if (--left === 0) then();
  };
  for (const res of responses) res.once("close", one);
}

function closeQuietly(socket: Duplex): void {
  if (socket.destroyed) return;
  socket.end();
  socket.once("finish", () => socket.destroy());
}

function refusalOf(error: ParseError): ApiError {
  switch (error.code) {
    case "HPE_HEADER_OVERFLOW":
      return headersTooLarge(`The request line and headers are larger than ${MAX_HEADER_BYTES / 1024} KB; send long input in a body`);
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return payloadTooLarge("The chunk extensions of the request body are too large");
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return requestTimeout("The request did not arrive in time");
    default:
      return invalidRequest("The HTTP request is malformed");
  }
}

/**
 * The request target (path and query) of the request the parse error is in, read from the bytes
 * Node was parsing: the request line is the error's own line or the nearest one above it in the
 * same head (a blank line above ends an earlier message's head). Undefined when it is not in these
 * bytes, or the request line is too broken to name one; the answer is then in the envelope.
 */
function failingTarget(error: ParseError): string | undefined {
  if (!Buffer.isBuffer(error.rawPacket)) return undefined;
  const text = error.rawPacket.toString("latin1");
  const at = Math.min(Math.max(error.bytesParsed ?? text.length, 0), text.length);
  let end = text.indexOf("\n", at);
  if (end < 0) end = text.length;
  for (let own = true; ; own = false) {
    const start = end === 0 ? 0 : text.lastIndexOf("\n", end - 1) + 1;
    const line = text.slice(start, text[end - 1] === "\r" ? end - 1 : end);
    if (line === "" && !own) return undefined;
    const target = requestTargetOf(line);
    if (target !== undefined) return target;
    if (start === 0) return undefined;
    end = start - 1;
  }
}

/**
 * The target of a request line, `METHOD /target HTTP/1.1`: the word before the version (a body
 * before it on the connection may run into the method), or, in a line without a version, the word
 * after a method (which has no colon, unlike a header's name).
 */
function requestTargetOf(line: string): string | undefined {
  const version = line.lastIndexOf(" HTTP/");
  const target = version > 0
    ? line.slice(line.lastIndexOf(" ", version - 1) + 1, version)
    : afterMethod(line);
  return target?.startsWith("/") ? target : undefined;
}

function afterMethod(line: string): string | undefined {
  const space = line.indexOf(" ");
  if (space <= 0 || line.slice(0, space).includes(":")) return undefined;
  const next = line.indexOf(" ", space + 1);
  return line.slice(space + 1, next < 0 ? undefined : next);
}

/**
 * Answers on the connection itself and closes it: for refusals of the HTTP exchange rather than of
 * an operation (its head, or a body that never arrives), which Node answers the same way (its own
 * request timeout writes a bare 408 and closes). `headers` adds to the answer's own (the CORS
 * headers an answer already carried).
 */
export function answerAndClose(socket: Duplex, answer: ErrorAnswer, headers: Record<string, string> = {}): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(answer.body);
  const head = Object.entries({ ...answer.headers, ...headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  socket.end(
    `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ""}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${head}Connection: close\r\n\r\n${body}`,
  );
  // What the client still sends is not read: the connection is done.
  socket.once("finish", () => socket.destroy());
}
