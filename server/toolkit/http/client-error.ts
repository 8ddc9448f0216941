import type { Server } from "node:http";
import type { Duplex } from "node:stream";
import { headersTooLarge, invalidRequest } from "./error-catalogue.ts";
import { type ApiError, errorBody } from "./errors.ts";

/** Node's limit on the request line plus headers (its --max-http-header-size default). */
export const MAX_HEADER_BYTES = 16 * 1024;

/**
 * Requests Node's HTTP parser refuses before Express sees them (a request line and headers over
 * 16 KB, a malformed request) would get a bare status with an empty body. They get the error
 * envelope like every other refusal.
 */
export function answerClientErrorsInEnvelope(server: Server): void {
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || (error.code === "ECONNRESET" && !socket.readable)) {
      socket.destroy();
      return;
    }
    const tooLarge = error.code === "HPE_HEADER_OVERFLOW";
    const apiError = tooLarge
      ? headersTooLarge(`The request line and headers are larger than ${MAX_HEADER_BYTES / 1024} KB; send long input in a body`)
      : invalidRequest("The HTTP request is malformed");
    answerAndClose(socket, apiError, tooLarge ? "Request Header Fields Too Large" : "Bad Request");
  });
}

/**
 * Answers on the connection itself, in the envelope, and closes it: for refusals of the HTTP
 * exchange rather than of an operation (its headers, or a body that never arrives), which Node
 * answers the same way (its own request timeout writes a bare 408 and closes).
 */
export function answerAndClose(socket: Duplex, apiError: ApiError, reason: string): void {
  const body = JSON.stringify(errorBody(apiError));
  socket.end(
    `HTTP/1.1 ${apiError.status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  // What the client still sends is not read: the connection is done.
  socket.once("finish", () => socket.destroy());
}
