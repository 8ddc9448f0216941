import type { Principal } from "../../toolkit/http/principal.ts";
import type { Services } from "../../toolkit/services.ts";
import { resolveApiKey } from "./api-keys/service.ts";
import { resolveAccessToken } from "./sessions/service.ts";

/** The credential a request presented: an API key (`pk_…`) or a bearer access token. */
export type Credential = { kind: "api_key"; key: string } | { kind: "access_token"; token: string };

/** The caller behind a credential, or undefined when it is invalid, expired or revoked. */
export function resolveCredential(services: Services, credential: Credential): Promise<Principal | undefined> {
  return credential.kind === "api_key" ? resolveApiKey(services, credential.key) : resolveAccessToken(services, credential.token);
}
