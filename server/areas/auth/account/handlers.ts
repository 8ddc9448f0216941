import type { Handler, HandlerMap } from "../../../toolkit/http/router.ts";
import { getUser, updateProfile } from "../users/service.ts";
import { toUser } from "../users/views.ts";
import { forgotPassword, resetPassword, sendVerificationEmail, verifyEmail } from "./email.ts";
import { deleteAccount, downloadExport, registerAccount, requestExport, restoreAccount } from "./service.ts";
import { archiveHeaders, deletedBody, exportStartedBody, FORGOT_MESSAGE, registeredBody, restoredBody } from "./views.ts";

const auth_register: Handler<"auth_register"> = async ({ services, body }) => {
  const { user, tokens } = await registerAccount(services, body);
  await sendVerificationEmail(services, user);
  return { status: 201, body: registeredBody(user, tokens) };
};

const auth_get_me: Handler<"auth_get_me"> = async ({ services, principal }) => ({
  status: 200,
  body: toUser(await getUser(services, principal.userId)),
});

const auth_update_me: Handler<"auth_update_me"> = async ({ services, principal, body }) => ({
  status: 200,
  body: toUser(await updateProfile(services, principal.userId, body)),
});

const auth_delete_me: Handler<"auth_delete_me"> = async ({ services, principal, body }) => {
  const { deletedAt, purgeAt } = await deleteAccount(services, principal, body?.password);
  return { status: 200, body: deletedBody(deletedAt, purgeAt) };
};

const auth_restore_me: Handler<"auth_restore_me"> = async ({ services, body }) => {
  const { user, tokens, apiKeys } = await restoreAccount(services, body.email, body.password);
  return { status: 200, body: restoredBody(user, tokens, apiKeys) };
};

const auth_export_data: Handler<"auth_export_data"> = async ({ services, principal }) => ({
  status: 200,
  body: exportStartedBody(await requestExport(services, principal.userId)),
});

const auth_download_export: Handler<"auth_download_export"> = async ({ services, params, query }) => {
  const archive = await downloadExport(services, params.export_id, Number(query.expires), query.signature);
  return { status: 200, body: archive, headers: archiveHeaders(archive) };
};

const auth_verify_email: Handler<"auth_verify_email"> = async ({ services, principal, body }) => {
  await verifyEmail(services, principal.userId, body.token);
  return { status: 200, body: { message: "E-mail address verified.", email_verified: true } };
};

const auth_forgot_password: Handler<"auth_forgot_password"> = async ({ services, body }) => {
  // The mail leaves after the answer, so a known and an unknown address answer alike.
  await forgotPassword(services, body.email);
  return { status: 200, body: { message: FORGOT_MESSAGE } };
};

const auth_reset_password: Handler<"auth_reset_password"> = async ({ services, body }) => {
  const revoked = await resetPassword(services, body.token, body.new_password);
  return { status: 200, body: { message: "Password changed. Please log in again.", revoked } };
};

export const handlers = {
  auth_register,
  auth_get_me,
  auth_update_me,
  auth_delete_me,
  auth_restore_me,
  auth_export_data,
  auth_download_export,
  auth_verify_email,
  auth_forgot_password,
  auth_reset_password,
} satisfies Partial<HandlerMap>;
