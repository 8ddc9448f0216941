import { beforeAll, describe } from "vitest";
import { call } from "./support/client.ts";
import { registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { idOr } from "./support/placeholders.ts";

// Models (issue 40): the registry's models a caller may use, and bring-your-own-key connections.
describe("models", () => {
  let user: TestUser;
  let connectionId: string | undefined;

  beforeAll(async () => {
    user = await registerUser("models");
  });

  op("models_list", async () => {
    await call("models_list", { token: user.token, expect: [200] });
  });

  op("provider_connections_create", async () => {
    const json = { name: "My provider", base_url: "https://api.example.com/v1", api_key: "sk-conformance-0000", model: "gpt-4o-mini" };
    // The server resolves the host and refuses what it cannot reach publicly; offline, that is a 400
    // the contract allows, and the calls below go with a placeholder.
    const answer = await call("provider_connections_create", { token: user.token, json, expect: [201, 400] });
    if (answer.status === 201) connectionId = (answer.json as { id: string }).id;
  });

  op("provider_connections_list", async () => {
    await call("provider_connections_list", { token: user.token, expect: [200] });
  });

  op("provider_connections_get", async () => {
    await call("provider_connections_get", { token: user.token, path: { id: idOr(connectionId) }, expect: [200] });
  });

  op("provider_connections_update", async () => {
    await call("provider_connections_update", { token: user.token, path: { id: idOr(connectionId) }, json: { name: "Renamed" }, expect: [200] });
  });

  op("provider_connections_delete", async () => {
    await call("provider_connections_delete", { token: user.token, path: { id: idOr(connectionId) }, expect: [204] });
  });
});
