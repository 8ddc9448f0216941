import { timingSafeEqual, createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { Request, Response } from "express";
import type { Config } from "../config.ts";
import { StartupError } from "../db/startup-error.ts";
import { noSuchRoute, unauthorized } from "../http/error-catalogue.ts";
import type { Logger } from "../logger.ts";
import { askPrimary, inCluster } from "./ipc.ts";
import { registry } from "./registry.ts";

/** The exposition's media type (Prometheus text format 0.0.4). */
export const CONTENT_TYPE = registry.contentType;

/** What a scrape answers: this process's metrics, or with `--processes N` every process's (asked of the primary). */
export async function exposition(): Promise<string> {
  if (inCluster()) return (await askPrimary("metrics")) as string;
  return registry.metrics();
}

const digest = (text: string) => createHash("sha256").update(text).digest();

/**
 * `GET /metrics` on the main listener (operation ops_metrics): only with `METRICS_TOKEN` set, and only
 * to a scraper that sends it as a bearer token; compared by digest in constant time.
 */
export async function answerMetricsRequest(config: Pick<Config, "metrics">, req: Request, res: Response): Promise<void> {
  const token = config.metrics.token;
  if (!token) throw noSuchRoute();
  const given = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "")?.[1];
  if (!given || !timingSafeEqual(digest(given), digest(token))) {
    throw unauthorized("The metrics need `Authorization: Bearer <METRICS_TOKEN>`");
  }
  const text = await exposition();
  res.status(200).set("Cache-Control", "no-store").type(CONTENT_TYPE).send(text);
}

export interface MetricsListener {
  url: string;
  close: () => Promise<void>;
}

/**
 * The separate listener of `METRICS_PORT` (on `METRICS_HOST`, loopback by default): `GET /metrics`
 * answers `text()`, anything else 404. No credential: who can reach the port can read the metrics.
 */
export async function startMetricsListener(settings: Config["metrics"], text: () => Promise<string>, log: Logger): Promise<MetricsListener> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (path !== "/metrics" || (req.method !== "GET" && req.method !== "HEAD")) {
      res.writeHead(404, { "Content-Type": "text/plain; charset=utf-8" }).end("Not found: the metrics are at /metrics\n");
      return;
    }
    text().then(
      (body) => {
        res.writeHead(200, { "Content-Type": CONTENT_TYPE, "Cache-Control": "no-store" });
        res.end(req.method === "HEAD" ? undefined : body);
      },
      (error: unknown) => {
        log.error({ err: error }, "metrics: the scrape failed");
        res.writeHead(500, { "Content-Type": "text/plain; charset=utf-8" }).end("The metrics could not be collected\n");
      },
    );
  });
  // A scraper keeps its connection alive between scrapes; a stop must not wait for it.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(new StartupError(error.code === "EADDRINUSE" ? `METRICS_PORT ${settings.port} on ${settings.host} is in use` : `The metrics listener could not start on ${settings.host}:${settings.port}: ${error.message}`)),
    );
    server.listen(settings.port, settings.host, () => resolve());
  });
  const host = settings.host.includes(":") ? `[${settings.host}]` : settings.host;
  const url = `http://${host}:${settings.port}/metrics`;
  log.info({ url }, "metrics are served");
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
