import pino, { type Logger } from "pino";
import type { Config } from "./config.ts";
import { traceLogFields } from "./tracing/logs.ts";

export type { Logger };

// Query values that are credentials: the signature of a data export's download link, which is its
// own authorization (issue 31 M3), and any token a client might put in a URL.
const SECRET_QUERY_VALUE = /([?&](?:signature|token|access_token|refresh_token|client_secret)=)[^&#]*/gi;

/**
 * Request logs carry id, method, URL and status only: never headers, so credentials (Authorization,
 * X-API-Key, cookies) cannot reach a log line; nor the credentials a URL may carry.
 */
export const httpSerializers = {
  req: (req: { id?: unknown; method?: string; url?: string }) => ({ id: req.id, method: req.method, url: req.url?.replace(SECRET_QUERY_VALUE, "$1[redacted]") }),
  res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
};

export function createLogger(config: Pick<Config, "logLevel" | "logPretty">): Logger {
  // While traces are on, each line written inside a span carries its trace_id and span_id.
  const mixin = traceLogFields();
  return pino({
    ...(mixin ? { mixin } : {}),
    level: config.logLevel,
    // The pid tells apart the lines of `serve --processes N`, which share one output.
    base: { service: "persona", pid: process.pid },
    serializers: { ...httpSerializers, err: pino.stdSerializers.err },
    ...(config.logPretty ? { transport: { target: "pino-pretty", options: { singleLine: true } } } : {}),
  });
}
