import type { Server } from "node:http";
import type { Duplex } from "node:stream";
import { errorBody, ApiError } from "./errors.ts";

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
    const status = tooLarge ? 431 : 400;
    const apiError = tooLarge
      ? new ApiError(431, "invalid_request", `The request line and headers are larger than ${MAX_HEADER_BYTES / 1024} KB; send long input in a body`)
      : new ApiError(400, "invalid_request", "The HTTP request is malformed");
    const body = JSON.stringify(errorBody(apiError));
    const reason = tooLarge ? "Request Header Fields Too Large" : "Bad Request";
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
