import { archiveRows, type AccountDataSection } from "../account-data.ts";

export const marketplaceAccountData: AccountDataSection[] = [
  { key: "ratings", tables: ["ratings"], exportRows: ({ knex, userId }) => archiveRows(knex, "ratings", "user_id", [userId]) },
  {
    key: "marketplace_listings",
    tables: ["marketplace_listings"],
    exportRows: ({ knex, userId }) => archiveRows(knex, "marketplace_listings", "creator_id", [userId]),
  },
  {
    key: "marketplace_trending",
    tables: ["marketplace_trending"],
    withheld: "The listing's trending score with its sort keys, a copy of the persona's recomputed score.",
  },
  {
    key: "persona_daily_users",
    tables: ["persona_daily_users"],
    withheld: "Per-day analytics counters, derived from the messages (which are exported).",
  },
];
