import { HANDLED, type Handler, type HandlerMap } from "../http/router.ts";

const ops_healthz: Handler<"ops_healthz"> = async () => ({ status: 200, body: { status: "ok" } });

const ops_readyz: Handler<"ops_readyz"> = async ({ services, res, log }) => {
  let database: "ok" | "error" = "ok";
  try {
    await services.db.ping();
  } catch (error) {
    log.warn({ err: error }, "readiness: database check failed");
    database = "error";
  }
  const worker = services.health.worker;
  if (database === "ok" && worker !== "error") {
    return { status: 200, body: { status: "ready", checks: { database, worker } } };
  }
  // The contract's 503 for this operation carries the readiness shape, not the error envelope.
  res.status(503).json({ status: "not_ready", checks: { database, worker } });
  return HANDLED;
};

export const handlers = { ops_healthz, ops_readyz } satisfies Partial<HandlerMap>;
