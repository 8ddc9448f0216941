import { invalidField } from "../../../toolkit/http/error-catalogue.ts";
import { HANDLED, type Handler, type HandlerMap } from "../../../toolkit/http/router.ts";
import { checkCredentials } from "../users/service.ts";
import { authenticateClient, clientForRedirect } from "./clients.ts";
import { checkChallenge, checkCsrfToken, csrfToken, exchangeCode, issueCode, parseScopes, refreshForClient, type AuthorizeRequest } from "./flow.ts";
import { sendConsentPage } from "./page.ts";

function authorizeRequest(fields: AuthorizeRequest): AuthorizeRequest {
  const { client_id, redirect_uri, scope, state, code_challenge, code_challenge_method } = fields;
  return { client_id, redirect_uri, scope, state, code_challenge, code_challenge_method };
}

// The client and redirect_uri are checked before anything else: until both are known good, every
// error is a JSON 400 to the user agent, never a redirect to an unverified address.

const oauth_authorize: Handler<"oauth_authorize"> = async ({ services, query, res }) => {
  const request = authorizeRequest(query);
  const client = await clientForRedirect(services, request.client_id, request.redirect_uri);
  const scopes = parseScopes(request.scope);
  checkChallenge(request.code_challenge, request.code_challenge_method);
  sendConsentPage(res, { clientName: client.name, request, scopes, csrfToken: await csrfToken(services, request) });
  return HANDLED;
};

const oauth_consent: Handler<"oauth_consent"> = async ({ services, body, res }) => {
  const request = authorizeRequest(body);
  const client = await clientForRedirect(services, request.client_id, request.redirect_uri);
  await checkCsrfToken(services, request, body.csrf_token);
  const scopes = parseScopes(request.scope);
  checkChallenge(request.code_challenge, request.code_challenge_method);

  const back = new URL(request.redirect_uri);
  if (body.decision === "deny") {
    back.searchParams.set("error", "access_denied");
  } else {
    const { email, password } = body;
    // Unknown e-mail and wrong password take the same time and read the same.
    const user = email !== undefined && password !== undefined ? await checkCredentials(services, email, password) : undefined;
    if (!user) {
      sendConsentPage(res, {
        clientName: client.name,
        request,
        scopes,
        csrfToken: await csrfToken(services, request),
        ...(email !== undefined ? { email } : {}),
        error: email === undefined || password === undefined ? "Enter your e-mail and password to approve." : "Wrong e-mail or password.",
      });
      return HANDLED;
    }
    const code = await issueCode(services, {
      clientId: client.id,
      userId: user.id,
      redirectUri: request.redirect_uri,
      scopes,
      codeChallenge: request.code_challenge,
    });
    back.searchParams.set("code", code);
  }
  back.searchParams.set("state", request.state);
  res.status(303).set({ Location: back.toString(), "Cache-Control": "no-store", "Referrer-Policy": "no-referrer" }).end();
  return HANDLED;
};

function required<T>(value: T | undefined, field: string, grant: string): T {
  if (value === undefined) {
    const message = `${field} is required for grant_type ${grant}`;
    throw invalidField(field, message, message);
  }
  return value;
}

const oauth_token: Handler<"oauth_token"> = async ({ services, body, res }) => {
  const client = await authenticateClient(services, body.client_id, body.client_secret);
  // RFC 6749 5.1: token responses are never cached.
  res.set({ "Cache-Control": "no-store", Pragma: "no-cache" });
  if (body.grant_type === "refresh_token") {
    const refreshToken = required(body.refresh_token, "refresh_token", body.grant_type);
    return { status: 200, body: await refreshForClient(services, client.id, refreshToken) };
  }
  const tokens = await exchangeCode(services, client.id, {
    code: required(body.code, "code", body.grant_type),
    redirectUri: required(body.redirect_uri, "redirect_uri", body.grant_type),
    codeVerifier: body.code_verifier,
  });
  return { status: 200, body: tokens };
};

export const handlers = { oauth_authorize, oauth_consent, oauth_token } satisfies Partial<HandlerMap>;
