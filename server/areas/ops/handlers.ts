import { readFileSync } from "node:fs";
import { contractPath } from "../../toolkit/contract.ts";
import { HANDLED, type Handler, type HandlerMap } from "../../toolkit/http/router.ts";
import { answerMetricsRequest } from "../../toolkit/metrics/exposition.ts";
import { readiness } from "../../toolkit/metrics/readiness.ts";
import { apiReference } from "./api-reference.ts";

// The service documents itself from the contract it was built from, read once per process.
const CONTRACT_YAML = readFileSync(contractPath, "utf8");
const CONTRACT_JSON = readFileSync(new URL("../../../generated/openapi.json", import.meta.url), "utf8");
const INFO = (JSON.parse(CONTRACT_JSON) as { info: { title: string; version: string } }).info;
const LINKS = { docs: "/docs", openapi_yaml: "/openapi.yaml", openapi_json: "/openapi.json", healthz: "/healthz", readyz: "/readyz" } as const;

const ops_index: Handler<"ops_index"> = async () => ({
  status: 200,
  body: {
    name: INFO.title,
    version: INFO.version,
    description: "The Persona API: its reference, its OpenAPI document and its probes. The API itself is under /v1.",
    links: LINKS,
  },
});

const ops_openapi_yaml: Handler<"ops_openapi_yaml"> = async ({ res }) => {
  res.status(200).type("application/yaml; charset=utf-8").send(CONTRACT_YAML);
  return HANDLED;
};

const ops_openapi_json: Handler<"ops_openapi_json"> = async ({ res }) => {
  res.status(200).type("application/json; charset=utf-8").send(CONTRACT_JSON);
  return HANDLED;
};

const ops_docs: Handler<"ops_docs"> = async ({ res, log }) => {
  const { html, policy } = await apiReference(log);
  res.status(200).set({ "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Content-Security-Policy": policy }).type("text/html; charset=utf-8").send(html);
  return HANDLED;
};

const ops_healthz: Handler<"ops_healthz"> = async () => ({ status: 200, body: { status: "ok" } });

/** The readiness checks and their meaning are the metrics module's (toolkit/metrics/readiness.ts, docs/operations.md). */
const ops_readyz: Handler<"ops_readyz"> = async ({ services, res }) => {
  const { ready, body } = await readiness(services);
  if (ready) return { status: 200, body: body as Extract<typeof body, { status: "ready" }> };
  // The contract's 503 for this operation carries the readiness shape, not the error envelope.
  res.status(503).json(body);
  return HANDLED;
};

/** Prometheus metrics for a scraper with METRICS_TOKEN (404 when it is not set). */
const ops_metrics: Handler<"ops_metrics"> = async ({ services, req, res }) => {
  await answerMetricsRequest(services.config, req, res);
  return HANDLED;
};

export const handlers = { ops_index, ops_docs, ops_openapi_yaml, ops_openapi_json, ops_healthz, ops_readyz, ops_metrics } satisfies Partial<HandlerMap>;
