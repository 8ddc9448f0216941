import { archiveRows, type AccountDataSection } from "../../toolkit/account-data.ts";

export const socialAccountData: AccountDataSection[] = [
  // Who the user follows; who follows the user is the followers' data.
  { key: "follows", tables: ["follows"], exportRows: ({ knex, userId }) => archiveRows(knex, "follows", "follower_id", [userId]) },
  { key: "likes", tables: ["likes"], exportRows: ({ knex, userId }) => archiveRows(knex, "likes", "user_id", [userId]) },
  // Share links the user made, with their open counts.
  { key: "shares", tables: ["persona_shares"], exportRows: ({ knex, userId }) => archiveRows(knex, "persona_shares", "user_id", [userId]) },
];
