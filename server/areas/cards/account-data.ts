import { archiveRows, type AccountDataSection } from "../../toolkit/account-data.ts";
import { deleteCardAvatarsOf } from "./service.ts";

export const cardAccountData: AccountDataSection[] = [
  { key: "persona_cards", tables: ["persona_cards"], exportRows: ({ knex, personaIds }) => archiveRows(knex, "persona_cards", "persona_id", personaIds) },
  {
    // The avatars of PNG cards as file names (their links are the personas' avatar_url), not their bytes.
    key: "card_avatars",
    tables: ["card_avatars"],
    exportRows: ({ knex, userId }) => archiveRows(knex, "card_avatars", "user_id", [userId]),
    // The files live outside the database; their rows, which name them, go with the users.
    beforePurge: (services, userIds) => deleteCardAvatarsOf(services, userIds),
  },
];
