import { conflict, unauthorized } from "../../../toolkit/http/error-catalogue.ts";
import type { Services } from "../../../toolkit/services.ts";
import { checkAnyCredentials, pendingDeletionRefusal } from "../users/service.ts";
import { requestExport } from "./service.ts";
import type { DataExportRow } from "./store.ts";

/**
 * A suspended account's data export (issue 41): its credentials are refused, so it proves itself
 * with its e-mail and password, as for a login (and under the login's attempt limits). A wrong
 * password is 401; an account that is not suspended signs in instead (409).
 */
export async function exportSuspendedAccount(services: Services, email: string, password: string): Promise<DataExportRow> {
  const user = await checkAnyCredentials(services, email, password);
  if (!user) throw unauthorized("The e-mail or password is wrong");
  if (user.deleted_at) throw pendingDeletionRefusal(user.deleted_at, services.now());
  if (!user.suspended_at) throw conflict("This account is not suspended: sign in and use POST /v1/auth/export-data");
  return requestExport(services, user.id);
}
