import { describe } from "vitest";
import { call } from "./support/client.ts";
import { op } from "./support/op.ts";

describe("ops", () => {
  op("ops_healthz", async () => {
    await call("ops_healthz", { expect: [200] });
  });

  op("ops_readyz", async () => {
    await call("ops_readyz", { expect: [200] });
  });
});
