import { describe } from "vitest";
import { call } from "./support/client.ts";
import { op } from "./support/op.ts";

// OAuth client applications are registered with the admin CLI, which a black-box suite cannot
// reach, so these calls name a client no server registered: the answers are judged only by the
// contract (a 400 here, the example page on the mock).
const client = {
  client_id: "oc_conformance_unregistered",
  redirect_uri: "https://client.conformance.example/callback",
  scope: "personas:read conversations:write",
  state: "b7f3c9e2a1d84f6e",
};

describe("oauth", () => {
  op("oauth_authorize", async () => {
    await call("oauth_authorize", {
      query: { response_type: "code", ...client, code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", code_challenge_method: "S256" },
    });
  });

  op("oauth_consent", async () => {
    await call("oauth_consent", {
      form: { ...client, email: "nobody@conformance.example", password: "Orion2026nights", decision: "approve", csrf_token: "0".repeat(64) },
    });
  });

  op("oauth_token", async () => {
    await call("oauth_token", {
      json: { grant_type: "authorization_code", code: "SplxlOBeZQQYbYS6WxSbIA", redirect_uri: client.redirect_uri, client_id: client.client_id, client_secret: "cs_conformance" },
    });
  });
});
