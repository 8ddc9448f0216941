import { archiveRows, type AccountDataSection } from "../../toolkit/account-data.ts";
import { shownLink } from "../../toolkit/links.ts";

export const personaAccountData: AccountDataSection[] = [
  {
    key: "personas",
    tables: ["personas"],
    // An avatar stored as a path of this service is exported as the link that reaches it.
    exportRows: async ({ services, knex, userId }) =>
      (await archiveRows(knex, "personas", "creator_id", [userId])).map((row) => ({ ...row, avatar_url: shownLink(services.config, row.avatar_url as string | null) })),
  },
  { key: "persona_trending", tables: ["persona_trending", "persona_trending_scores"], withheld: "Trending scores are recomputed from activity; they say nothing the personas do not." },
];
