import type { Knex } from "knex";
import type { OutboxRow } from "./store.ts";

/** Kept mails without their text, newest first. */
export async function listOutboxMails(
  knex: Knex,
  filter: { to?: string | undefined; kind?: string | undefined; limit: number },
): Promise<Omit<OutboxRow, "text" | "text_sealed">[]> {
  const query = knex("email_outbox")
    .select("id", "to", "subject", "kind", "created_at", "sent_at")
    .orderBy([{ column: "created_at", order: "desc" }, { column: "id", order: "desc" }])
    .limit(filter.limit);
  if (filter.to) query.whereRaw("lower(??) = lower(?)", ["to", filter.to]);
  if (filter.kind) query.where({ kind: filter.kind });
  return query;
}
