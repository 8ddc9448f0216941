import type { Knex } from "knex";

/** An account as the operator's list shows it. */
export interface AccountRow {
  id: string;
  email: string;
  username: string;
  plan: string;
  created_at: Date;
}

const COLUMNS = ["id", "email", "username", "plan", "created_at"] as const;

/** Live accounts, newest first, optionally only those on `plan`. */
export async function listLiveAccounts(knex: Knex, filter: { plan?: string | undefined; limit: number }): Promise<AccountRow[]> {
  const query = knex<AccountRow>("users")
    .select(...COLUMNS)
    .whereNull("deleted_at")
    .orderBy([{ column: "created_at", order: "desc" }, { column: "id", order: "desc" }])
    .limit(filter.limit);
  if (filter.plan) query.where("plan", filter.plan);
  return (await query) as AccountRow[];
}

/** Sets the plan of the live account named by id, e-mail or username (any letter case); undefined when there is none. */
export async function updatePlanOf(knex: Knex, who: string, plan: string, now: Date): Promise<AccountRow | undefined> {
  const [row] = await knex("users")
    .whereNull("deleted_at")
    .andWhere((match) => match.whereRaw("id::text = ?", [who]).orWhereRaw("lower(email) = lower(?)", [who]).orWhereRaw("lower(username) = lower(?)", [who]))
    .update({ plan, updated_at: now })
    .returning([...COLUMNS]);
  return row as AccountRow | undefined;
}
