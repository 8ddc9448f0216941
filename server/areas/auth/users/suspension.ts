import { accountSuspended } from "../../../toolkit/http/error-catalogue.ts";
import type { ApiError } from "../../../toolkit/http/errors.ts";
import type { Services } from "../../../toolkit/services.ts";
import { revokedCredentials } from "../credential-cache.ts";
import { findUserByAnyName, findUserIncludingDeleted, setProfileTakenDown, setShowMature, setSuspension, type UserRow } from "./store.ts";

// Suspension (issue 41, docs/adr/0352): a suspended account cannot sign in, refresh a session or use
// any credential (403 `account_suspended`, everywhere a credential is needed), and its public content
// is hidden by the rule that hides a deleted account's (server/areas/personas/shown.ts). Unlike a
// deletion it is reversible, revokes nothing, and leaves the account its data export
// (`POST /v1/auth/suspended/export-data`).

/** The operation a suspended account still has: its data export, proven by e-mail and password. */
export const SUSPENDED_EXPORT = "POST /v1/auth/suspended/export-data";

export interface Suspension {
  at: string;
  reason: string | null;
}

/** The suspension of an account's row, if it is suspended. */
export function suspensionOf(at: Date | null | undefined, reason: string | null | undefined): Suspension | undefined {
  return at ? { at: new Date(at).toISOString(), reason: reason ?? null } : undefined;
}

/** The 403 a suspended account's login, refresh or credential gets, saying why and what it may still do. */
export function suspendedRefusal(suspension: Suspension): ApiError {
  const why = suspension.reason ? `: ${suspension.reason}` : "";
  return accountSuspended(`This account is suspended${why}. It can still export its data with ${SUSPENDED_EXPORT} (the same e-mail and password)`, {
    suspended_at: suspension.at,
    reason: suspension.reason,
    export: SUSPENDED_EXPORT,
  });
}

/** The account named by id, e-mail or username, deleted or not (the operator's commands); undefined when none. */
export async function findAccount(services: Services, who: string): Promise<UserRow | undefined> {
  return findUserByAnyName(services.db.knex, who.trim());
}

/** The account by id, deleted or not; undefined when none. */
export async function findAccountById(services: Services, id: string): Promise<UserRow | undefined> {
  return findUserIncludingDeleted(services.db.knex, id);
}

/**
 * Suspends a live account (or, with `at` null, lifts its suspension). Its credentials are refused
 * from the next request on, in every process: their cached resolutions are dropped now.
 */
export async function setAccountSuspension(services: Services, userId: string, at: Date | null, reason: string | null): Promise<UserRow | undefined> {
  const row = await setSuspension(services.db.knex, userId, at, at ? reason : null);
  if (row) await revokedCredentials(services, { userId });
  return row;
}

/** Takes an account's public profile down (`at`) or puts it back (null); false when none. */
export async function setProfileTakedown(services: Services, userId: string, at: Date | null): Promise<boolean> {
  return setProfileTakenDown(services.db.knex, userId, at);
}

/** Records the account's opt-in to mature content; undefined when the account is not live. */
export async function saveShowMature(services: Services, userId: string, show: boolean): Promise<boolean | undefined> {
  return setShowMature(services.db.knex, userId, show);
}
