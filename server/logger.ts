import pino, { type Logger } from "pino";
import type { Config } from "./config.ts";

export type { Logger };

/**
 * Request logs carry id, method, URL and status only: never headers, so credentials (Authorization,
 * X-API-Key, cookies) cannot reach a log line.
 */
export const httpSerializers = {
  req: (req: { id?: unknown; method?: string; url?: string }) => ({ id: req.id, method: req.method, url: req.url }),
  res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
};

export function createLogger(config: Pick<Config, "logLevel" | "logPretty">): Logger {
  return pino({
    level: config.logLevel,
    // The pid tells apart the lines of `serve --processes N`, which share one output.
    base: { service: "persona", pid: process.pid },
    serializers: { ...httpSerializers, err: pino.stdSerializers.err },
    ...(config.logPretty ? { transport: { target: "pino-pretty", options: { singleLine: true } } } : {}),
  });
}
