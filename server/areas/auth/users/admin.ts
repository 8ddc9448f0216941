import { PLAN_LIMITS, type PlanName } from "../../../quota/plans.ts";
import { invalidField } from "../../../toolkit/http/error-catalogue.ts";
import type { Services } from "../../../toolkit/services.ts";
import { listLiveAccounts, updatePlanOf, type AccountRow } from "./store.ts";

// Operator actions on accounts (`persona users`): the contract has no endpoint for them. Billing
// changes the plan of a paying user; a server without billing changes it here.

/** An account as the operator sees it. */
export interface AccountSummary {
  id: string;
  email: string;
  username: string;
  plan: string;
  created_at: string;
}

const summary = (row: AccountRow): AccountSummary => ({
  id: row.id,
  email: row.email,
  username: row.username,
  plan: row.plan,
  created_at: new Date(row.created_at).toISOString(),
});

/** A plan of the contract; anything else is refused before the account is touched. */
function checkPlan(plan: string): PlanName {
  if (!Object.hasOwn(PLAN_LIMITS, plan)) {
    throw invalidField("plan", `must be one of ${Object.keys(PLAN_LIMITS).join(", ")}`, "The plan is not valid");
  }
  return plan as PlanName;
}

/** Live accounts, newest first. */
export async function listAccounts(services: Services, filter: { plan?: string | undefined; limit: number }): Promise<AccountSummary[]> {
  if (filter.plan !== undefined) checkPlan(filter.plan);
  return (await listLiveAccounts(services.db.knex, filter)).map(summary);
}

/**
 * Puts the live account named by id, e-mail or username on `plan`; undefined when there is none.
 * Limits are read from the account on every request, so the new ones apply to its next request.
 */
export async function setAccountPlan(services: Services, who: string, plan: string): Promise<AccountSummary | undefined> {
  const row = await updatePlanOf(services.db.knex, who, checkPlan(plan), services.now());
  return row && summary(row);
}
