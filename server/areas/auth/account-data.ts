import { archiveRows, type AccountDataSection } from "../../toolkit/account-data.ts";

/** The account's keys (their hints, never the keys) and its credentials, which never leave. */
export const authAccountData: AccountDataSection[] = [
  { key: "api_keys", tables: ["api_keys"], exportRows: ({ knex, userId }) => archiveRows(knex, "api_keys", "user_id", [userId]) },
  {
    key: "credentials",
    tables: ["sessions", "refresh_tokens", "email_tokens", "oauth_codes"],
    withheld: "Credentials (sessions, refresh tokens, e-mail and OAuth codes) are secrets with short lives, not the user's content.",
  },
  {
    key: "data_exports",
    tables: ["data_exports"],
    withheld: "Earlier archives are this same export; they expire with their download links.",
  },
];
