import pino, { type Logger } from "pino";
import type { Config } from "./config.ts";

export type { Logger };

export function createLogger(config: Pick<Config, "logLevel" | "logPretty">): Logger {
  return pino({
    level: config.logLevel,
    base: { service: "persona" },
    redact: { paths: ["req.headers.authorization", "req.headers['x-api-key']", "req.headers.cookie"], censor: "[redacted]" },
    ...(config.logPretty ? { transport: { target: "pino-pretty", options: { singleLine: true } } } : {}),
  });
}
