import { describe } from "vitest";
import { call } from "./support/client.ts";
import { op } from "./support/op.ts";

describe("ops", () => {
  op("ops_index", async () => {
    await call("ops_index", { expect: [200] });
  });

  op("ops_openapi_yaml", async () => {
    await call("ops_openapi_yaml", { expect: [200] });
  });

  op("ops_openapi_json", async () => {
    await call("ops_openapi_json", { expect: [200] });
  });

  // Rendering takes seconds the first time (Redocly builds the page on demand).
  op("ops_docs", async () => {
    await call("ops_docs", { expect: [200, 503] });
  }, 180_000);

  op("ops_healthz", async () => {
    await call("ops_healthz", { expect: [200] });
  });

  op("ops_readyz", async () => {
    await call("ops_readyz", { expect: [200] });
  });

  // On the API's port only with METRICS_TOKEN set (404 without, 401 without the token's bearer).
  op("ops_metrics", async () => {
    await call("ops_metrics", { expect: [200, 401, 404] });
  });
});
