import { archiveRows, type AccountDataSection } from "../../toolkit/account-data.ts";

export const marketplaceAccountData: AccountDataSection[] = [
  { key: "ratings", tables: ["ratings"], exportRows: ({ knex, userId }) => archiveRows(knex, "ratings", "user_id", [userId]) },
  {
    key: "marketplace_listings",
    tables: ["marketplace_listings"],
    exportRows: ({ knex, userId }) => archiveRows(knex, "marketplace_listings", "creator_id", [userId]),
  },
  {
    key: "marketplace_indexes",
    tables: ["marketplace_trending", "marketplace_search"],
    withheld: "The listing's trending score and search document: copies of the persona's recomputed score and of the listing's own text, for ranking and search.",
  },
  {
    key: "persona_daily_users",
    tables: ["persona_daily_users"],
    withheld: "Per-day analytics counters, derived from the messages (which are exported).",
  },
];
