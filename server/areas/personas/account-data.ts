import { archiveRows, type AccountDataSection } from "../../toolkit/account-data.ts";

export const personaAccountData: AccountDataSection[] = [
  { key: "personas", tables: ["personas"], exportRows: ({ knex, userId }) => archiveRows(knex, "personas", "creator_id", [userId]) },
  { key: "persona_trending", tables: ["persona_trending", "persona_trending_scores"], withheld: "Trending scores are recomputed from activity; they say nothing the personas do not." },
];
