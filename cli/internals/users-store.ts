import type { Knex } from "knex";

/**
 * Accounts as an administrator sees them, and their plan. Billing changes plans for paying users;
 * a self-hosted server without billing changes them here (there is no endpoint for it).
 */
export interface AccountSummary {
  id: string;
  email: string;
  username: string;
  plan: string;
  created_at: string;
}

interface Row {
  id: string;
  email: string;
  username: string;
  plan: string;
  created_at: Date;
}

const summary = (row: Row): AccountSummary => ({ ...row, created_at: new Date(row.created_at).toISOString() });

/** Live accounts, newest first. */
export async function listAccounts(knex: Knex, filter: { plan?: string; limit: number }): Promise<AccountSummary[]> {
  const query = knex<Row>("users")
    .select("id", "email", "username", "plan", "created_at")
    .whereNull("deleted_at")
    .orderBy([{ column: "created_at", order: "desc" }, { column: "id", order: "desc" }])
    .limit(filter.limit);
  if (filter.plan) query.where("plan", filter.plan);
  return (await query).map(summary);
}

/** Sets the plan of the live account named by id, e-mail or username; undefined when there is none. */
export async function setAccountPlan(knex: Knex, who: string, plan: string, now: Date): Promise<AccountSummary | undefined> {
  const [row] = await knex<Row>("users")
    .whereNull("deleted_at")
    .andWhere((match) => match.whereRaw("id::text = ?", [who]).orWhereRaw("lower(email) = lower(?)", [who]).orWhereRaw("lower(username) = lower(?)", [who]))
    .update({ plan, updated_at: now } as never)
    .returning(["id", "email", "username", "plan", "created_at"]);
  return row ? summary(row as Row) : undefined;
}
