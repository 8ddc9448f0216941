import { archiveRows, type AccountDataSection } from "../../toolkit/account-data.ts";

/** The instruction history and A/B variants of the user's personas. */
export const studioAccountData: AccountDataSection[] = [
  {
    key: "instruction_versions",
    tables: ["instruction_versions"],
    exportRows: ({ knex, personaIds }) => archiveRows(knex, "instruction_versions", "persona_id", personaIds),
  },
  {
    key: "persona_variants",
    tables: ["persona_variants"],
    exportRows: ({ knex, personaIds }) => archiveRows(knex, "persona_variants", "persona_id", personaIds),
  },
  {
    key: "analytics_rollups",
    tables: ["persona_daily_messages", "persona_daily_senders"],
    withheld: "Per-day counters of the user's personas (messages, senders by days since their previous visit), derived from stored messages and moved by them.",
  },
  {
    key: "variant_assignments",
    tables: ["variant_assignments"],
    withheld: "Which variant of a creator's experiment answered a conversation is the creator's test data; the messages themselves are in `conversations`.",
  },
];
