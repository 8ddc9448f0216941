import express, { type Request, type RequestHandler, type Response } from "express";
import multer from "multer";
import type { Config } from "../config.ts";
import type { OperationInfo } from "../contract.ts";
import { watchBody, type BodyDeadline } from "./body-deadline.ts";
import { answerAndClose } from "./client-error.ts";
import { errorAnswer, type ErrorDialect } from "./error-dialects.ts";
import { invalidField, payloadTooLarge, requestTimeout } from "./error-catalogue.ts";
import type { ApiError } from "./errors.ts";
import { verifyUtf8Body, verifyUtf8Form } from "./well-formed.ts";

/** Largest multipart upload of any operation (speech-to-text audio); each area checks its own limit. */
export const MAX_UPLOAD_BYTES = 25 * 1024 * 1024;

/**
 * What a multipart body may hold beyond its one file (issue 31 H5): every upload form of the
 * contract has a single file part and no text field, so a few small text fields are room enough
 * for a client's extras (which the contract's validator then refuses by name). Busboy refuses
 * more while it reads, so nothing past these bounds is held in memory.
 */
export const MULTIPART_LIMITS = { files: 1, fields: 8, fieldSize: 1024, fieldNameSize: 100, parts: 9, headerPairs: 20 } as const;
// Part headers and boundaries around the largest file: a declared length past this is refused unread.
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

export type BodySettings = Pick<Config, "bodyLimitBytes" | "bodyTimeoutMs" | "uploadIdleTimeoutMs">;

const FORM = /^\s*application\/x-www-form-urlencoded\s*(;|$)/i;

/**
 * The stage that reads a request's body, once its operation and caller are known (issue 31: the
 * caller is known before the service spends anything on the request). JSON and form bodies up to
 * `bodyLimitBytes` must arrive within `bodyTimeoutMs`; a multipart upload may take longer as long
 * as it keeps sending (`uploadIdleTimeoutMs` without a byte ends it). Either answers 408, in the
 * error shape of the request's path (`dialects`), and closes the connection.
 */
export function readBody(op: OperationInfo, settings: BodySettings, dialects: readonly ErrorDialect[] = []): RequestHandler {
  const json = express.json({ limit: settings.bodyLimitBytes, verify: verifyUtf8Body });
  const form = express.urlencoded({ extended: false, limit: settings.bodyLimitBytes, verify: verifyUtf8Form });
  const small: BodyDeadline = { totalMs: settings.bodyTimeoutMs, idleMs: 0 };
  const upload: BodyDeadline = { totalMs: 0, idleMs: settings.uploadIdleTimeoutMs };
  const parts = op.multipart ? multipartParser() : undefined;
  return (req, res, next) => {
    // body-parser's own test for a body; without one the parsers only set req.body.
    if (req.headers["transfer-encoding"] === undefined && req.headers["content-length"] === undefined) {
      if (!Object.hasOwn(req, "body")) req.body = undefined;
      return next();
    }
    const multipart = parts !== undefined && isMultipart(req);
    if (multipart && declaredLength(req) > MAX_UPLOAD_BYTES + MULTIPART_OVERHEAD_BYTES) {
      res.setHeader("connection", "close");
      return next(payloadTooLarge(`An upload may be at most ${MAX_UPLOAD_BYTES} bytes`));
    }
    // One parser, by the media type: each parser first checks the type for itself.
    const parser = multipart ? parts : FORM.test(req.headers["content-type"] ?? "") ? form : json;
    let settled = false;
    const stop = watchBody(req, multipart ? upload : small, (reason) => {
      settled = true;
      const seconds = Math.round((multipart ? settings.uploadIdleTimeoutMs : settings.bodyTimeoutMs) / 1000);
      const message = reason === "idle" ? `The upload sent nothing for ${seconds} s` : `The request body did not arrive within ${seconds} s`;
      // A refusal of the exchange, not of the operation (no operation declares 408): answered on
      // the connection, which then closes, as Node's own request timeout does.
      res.statusCode = 408;
      answerAndClose(req.socket, errorAnswer(requestTimeout(message), req.originalUrl, dialects), carriedHeaders(res));
    });
    parser(req, res, (error?: unknown) => {
      stop();
      // The parser ends, too, when the connection closes after a 408: that answer is given.
      if (settled) return;
      settled = true;
      next(error);
    });
  };
}

/**
 * What the answer carries already and the 408 written on the connection keeps: its request id, and
 * its CORS headers (http/cors.ts), so that a page on another origin reads the 408 too.
 */
function carriedHeaders(res: Response): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of ["access-control-allow-origin", "access-control-expose-headers", "vary", "x-request-id"]) {
    const value = res.getHeader(name);
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : String(value);
  }
  return headers;
}

const isMultipart = (req: Request) => req.headers["content-type"]?.toLowerCase().includes("multipart/form-data") === true;

function declaredLength(req: Request): number {
  const length = Number(req.headers["content-length"]);
  return Number.isFinite(length) ? length : 0;
}

/** Parses a multipart body; a file's field is set in the body (empty) so that its presence validates. */
function multipartParser(): RequestHandler {
  // File names in part headers are UTF-8 (RFC 7578 4.2; what browsers send), not busboy's latin1.
  const uploads = multer({ limits: { ...MULTIPART_LIMITS, fileSize: MAX_UPLOAD_BYTES }, defParamCharset: "utf8" } as multer.Options).any();
  return (req, res, next) => {
    uploads(req, res, (error?: unknown) => {
      if (error) return next(multipartError(error));
      const files = (req.files as { fieldname: string }[] | undefined) ?? [];
      const counts = new Map<string, number>();
      for (const file of files) counts.set(file.fieldname, (counts.get(file.fieldname) ?? 0) + 1);
      for (const [field, count] of counts) (req.body as Record<string, unknown>)[field] = count > 1 ? new Array(count).fill("") : "";
      next();
    });
  };
}

/**
 * Multer's refusals as answers: a file, field or part past its bound is 413 (the body is larger
 * than the service takes), an unreadable body 400. Anything else is the body's own fault too: a
 * malformed part header, a body cut off mid-part, a missing boundary.
 */
function multipartError(error: unknown): ApiError {
  if (error instanceof multer.MulterError) {
    if (/^LIMIT_(FILE_SIZE|FILE_COUNT|PART_COUNT|FIELD_COUNT|FIELD_VALUE|FIELD_KEY)$/.test(error.code)) {
      return payloadTooLarge(`${error.message} (an upload takes one file of at most ${MAX_UPLOAD_BYTES} bytes and at most ${MULTIPART_LIMITS.fields} text fields of ${MULTIPART_LIMITS.fieldSize} bytes)`);
    }
    return badMultipart(error.message);
  }
  const message = (error as Error | undefined)?.message || "unreadable";
  if (/Multipart: Boundary not found/i.test(message)) {
    return invalidField("", "multipart file(s) required", "Invalid request: multipart file(s) required");
  }
  return badMultipart(message);
}

const badMultipart = (reason: string) =>
  invalidField("/body", reason, `The multipart body is malformed: ${reason}`);
