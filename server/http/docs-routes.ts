import { readFileSync } from "node:fs";
import { Router } from "express";
import { contract, contractPath } from "../contract.ts";
import type { Logger } from "../logger.ts";
import { apiReference } from "./api-reference.ts";

/** Where the running server documents itself; the index at `/` lists them with the probes. */
export const DOCS_LINKS = {
  docs: "/docs",
  openapi_yaml: "/openapi.yaml",
  openapi_json: "/openapi.json",
  healthz: "/healthz",
  readyz: "/readyz",
} as const;

/**
 * `GET /`, `/docs`, `/openapi.yaml` and `/openapi.json`: the service's own documentation, outside
 * `/v1` and credential-free. They describe the contract rather than belong to it, so they are
 * answered before the contract validator (which refuses any path the contract does not name).
 */
export function docsRoutes(log: Logger): Router {
  const yaml = readFileSync(contractPath, "utf8");
  const json = JSON.stringify(contract);
  const reference = apiReference(log);
  const index = {
    name: contract.info.title,
    version: contract.info.version,
    description: "The Persona API: its reference, its OpenAPI document and its probes. The API itself is under /v1.",
    links: DOCS_LINKS,
  };
  const router = Router();
  router.get("/", (_req, res) => {
    res.json(index);
  });
  router.get(DOCS_LINKS.openapi_yaml, (_req, res) => {
    res.type("application/yaml; charset=utf-8").send(yaml);
  });
  router.get(DOCS_LINKS.openapi_json, (_req, res) => {
    res.type("application/json; charset=utf-8").send(json);
  });
  router.get(DOCS_LINKS.docs, async (_req, res, next) => {
    try {
      const html = await reference();
      res.set({ "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY" }).type("text/html; charset=utf-8").send(html);
    } catch (error) {
      next(error);
    }
  });
  return router;
}
