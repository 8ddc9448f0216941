import type { Knex } from "knex";
import { firstFreeHandle, handleFromName, HANDLE_MAX_LENGTH } from "../../toolkit/handles.ts";

/**
 * A free handle among the creator's personas for `name`. Read inside the transaction that inserts
 * the persona, under the lock on the creator's row that the creation takes (the plan limit's), so
 * two creations cannot pick the same one; the unique index is the backstop.
 */
export async function freeHandleFor(trx: Knex, creatorId: string, name: string): Promise<string> {
  const base = handleFromName(name);
  const stem = base.slice(0, HANDLE_MAX_LENGTH - 4);
  const rows: { handle: string }[] = await trx("personas")
    .where({ creator_id: creatorId })
    .andWhere((q) => q.where("handle", base).orWhere("handle", "like", `${stem.replace(/[\\%_]/g, "\\$&")}%`))
    .select("handle");
  return firstFreeHandle(base, new Set(rows.map((row) => row.handle)));
}
