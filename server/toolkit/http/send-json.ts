import express, { type Response } from "express";

const JSON_TYPE = "application/json; charset=utf-8";
const expressJson = express.response.json;

/**
 * A JSON answer as Express's `res.json` writes it, without its per-call content-type lookups, when
 * nothing else has a say: `res.json` is Express's own (the test-time response validator wraps it),
 * no content type was chosen already, and no ETag or Last-Modified makes a 304 possible.
 */
export function sendJson(res: Response, status: number, body: unknown): void {
  if (res.json !== expressJson || res.hasHeader("Content-Type") || res.hasHeader("ETag") || res.hasHeader("Last-Modified")) {
    res.status(status).json(body);
    return;
  }
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader("Content-Type", JSON_TYPE);
  res.setHeader("Content-Length", Buffer.byteLength(text));
  res.end(res.req.method === "HEAD" ? undefined : text);
}
