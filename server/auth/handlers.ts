import { ApiError } from "../http/errors.ts";
import { principalOf } from "../http/authenticate.ts";
import type { Handler } from "../http/router.ts";
import { sendVerificationEmail } from "./email-flows.ts";
import { verifyPassword } from "./passwords.ts";
import { refreshSession, startSession } from "./sessions.ts";
import { findUserByEmail } from "./store.ts";
import { getUser, registerAccount, toUser, updateProfile } from "./users.ts";

export const auth_register: Handler<"auth_register"> = async ({ services, body }) => {
  const { user, tokens } = await registerAccount(services, body);
  await sendVerificationEmail(services, user);
  return { status: 201, body: { user: toUser(user), ...tokens } };
};

export const auth_login: Handler<"auth_login"> = async ({ services, body }) => {
  const user = await findUserByEmail(services.db.knex, body.email);
  // Unknown e-mail and wrong password take the same time and give the same answer.
  if (!(await verifyPassword(user?.password_hash, body.password)) || !user) {
    throw new ApiError(401, "unauthorized", "The e-mail or password is wrong");
  }
  const { sessionId: _, ...tokens } = await startSession(services, user.id);
  const { id, email, username, display_name, avatar_url, email_verified } = toUser(user);
  return { status: 200, body: { ...tokens, user: { id, email, username, display_name, avatar_url, email_verified } } };
};

export const auth_refresh: Handler<"auth_refresh"> = async ({ services, body }) => ({
  status: 200,
  body: await refreshSession(services, body.refresh_token),
});

export const auth_get_me: Handler<"auth_get_me"> = async ({ services, req }) => ({
  status: 200,
  body: toUser(await getUser(services, principalOf(req).userId)),
});

export const auth_update_me: Handler<"auth_update_me"> = async ({ services, req, body }) => ({
  status: 200,
  body: toUser(await updateProfile(services, principalOf(req).userId, body)),
});
