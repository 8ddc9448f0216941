import { notLive } from "../../http/router.ts";

// OAuth 2.0 authorization-code flow. Being built.
export const { oauth_authorize, oauth_consent, oauth_token } = notLive("oauth", ["oauth_authorize", "oauth_consent", "oauth_token"]);
