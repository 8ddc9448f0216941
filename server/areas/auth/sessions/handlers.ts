import type { Handler, HandlerMap } from "../../../toolkit/http/router.ts";
import { login, refreshSession } from "./service.ts";
import { loginBody } from "./views.ts";

const auth_login: Handler<"auth_login"> = async ({ services, body }) => {
  const { user, tokens } = await login(services, body.email, body.password);
  return { status: 200, body: loginBody(tokens, user) };
};

const auth_refresh: Handler<"auth_refresh"> = async ({ services, body }) => ({
  status: 200,
  body: await refreshSession(services, body.refresh_token),
});

export const handlers = { auth_login, auth_refresh } satisfies Partial<HandlerMap>;
