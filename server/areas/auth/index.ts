// The auth area's public surface: accounts, sessions, API keys, OAuth, and the request pipeline's
// caller identification (server/app.ts).
import { defineArea } from "../../toolkit/area.ts";
import { authAccountData } from "./account-data.ts";
import { emailTasks } from "./account/email.ts";
import { handlers as account } from "./account/handlers.ts";
import { accountCrontab, accountTasks } from "./account/jobs.ts";
import { handlers as apiKeys } from "./api-keys/handlers.ts";
import { handlers as oauth } from "./oauth/handlers.ts";
import { handlers as sessions } from "./sessions/handlers.ts";

export { identifyCaller, requireCredential } from "./authenticate.ts";
export { authLimits } from "./limits.ts";
export { allows } from "./scopes.ts";
export { purgeExpiredCodes } from "./oauth/flow.ts";
export { getUser, isLiveUser } from "./users/service.ts";
export { emailTokenState, resetPassword, verifyEmail, type ResetRevoked } from "./account/email.ts";
export type { EmailTokenState } from "./account/email-tokens.ts";

export const area = defineArea({
  name: "auth",
  handlers: { ...sessions, ...apiKeys, ...account, ...oauth },
  tasks: (services, house) => ({ ...accountTasks(services, house.accountDataSections), ...emailTasks(services) }),
  crontab: accountCrontab,
  accountData: authAccountData,
  tables: ["users", "sessions", "refresh_tokens", "api_keys", "oauth_clients", "oauth_codes", "email_tokens", "data_exports"],
});
export { registerOAuthClient } from "./oauth/clients.ts";
export { listOAuthClients, removeOAuthClient } from "./oauth/clients-admin.ts";
export { listAccounts, setAccountPlan } from "./users/admin.ts";
// What the safety area reads and changes (issue 41).
export { findAccount, findAccountById, saveShowMature, setAccountSuspension, setProfileTakedown } from "./users/suspension.ts";
export { exportSuspendedAccount } from "./account/suspended-export.ts";
export { exportStartedBody } from "./account/views.ts";
export type { UserRow } from "./users/service.ts";
