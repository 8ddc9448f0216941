import type { Request } from "express";

export interface BodyDeadline {
  /** The whole body must have arrived this long after reading began; 0 for no total deadline. */
  totalMs: number;
  /** No byte for this long ends the wait; 0 for no idle limit. */
  idleMs: number;
}

/**
 * Watches a body being read and calls `expired` once when it has not arrived in time (issue 31
 * H3: a client sending one byte every few seconds must not keep the service waiting for minutes).
 * Progress is read from the socket's byte count, so nothing listens to the request stream itself
 * (a 'data' listener would set it flowing before its parser is attached). Returns `stop`, to call
 * when the body has arrived or the request has ended otherwise.
 */
export function watchBody(req: Request, deadline: BodyDeadline, expired: (reason: "total" | "idle") => void): () => void {
  const started = Date.now();
  const socket = req.socket;
  let seen = socket.bytesRead;
  let timer: NodeJS.Timeout | undefined;
  let deciding: NodeJS.Immediate | undefined;
  const step = deadline.idleMs > 0 ? Math.min(deadline.idleMs, deadline.totalMs || deadline.idleMs) : deadline.totalMs;
  if (step <= 0) return () => {};
  // A timer that fires after the event loop was busy runs before the socket reads the bytes that
  // arrived meanwhile: the decision waits for that I/O turn (setImmediate runs after it), so a
  // body that arrived in time, and a parser that finished with it, are seen first.
  const check = () => {
    timer = undefined;
    deciding = setImmediate(decide);
  };
  const decide = () => {
    deciding = undefined;
    const now = Date.now();
    if (deadline.totalMs > 0 && now - started >= deadline.totalMs) return expired("total");
    const read = socket.bytesRead;
    if (deadline.idleMs > 0 && read === seen) return expired("idle");
    seen = read;
    const left = deadline.totalMs > 0 ? deadline.totalMs - (now - started) : step;
    timer = setTimeout(check, Math.max(1, Math.min(step, left)));
    timer.unref();
  };
  timer = setTimeout(check, step);
  timer.unref();
  return () => {
    if (timer) clearTimeout(timer);
    if (deciding) clearImmediate(deciding);
    timer = undefined;
    deciding = undefined;
  };
}
