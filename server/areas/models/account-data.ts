import { archiveRows, type AccountDataSection } from "../../toolkit/account-data.ts";

export const modelAccountData: AccountDataSection[] = [
  // Without their keys: `api_key_encrypted` is a credential column the archive drops.
  { key: "provider_connections", tables: ["provider_connections"], exportRows: ({ knex, userId }) => archiveRows(knex, "provider_connections", "user_id", [userId]) },
];
