import { notLive } from "../http/router.ts";

// E-mail verification and password reset. Being built.
export const { auth_verify_email, auth_forgot_password, auth_reset_password } = notLive("auth", [
  "auth_verify_email", "auth_forgot_password", "auth_reset_password",
]);
