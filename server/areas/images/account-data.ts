import { archiveRows, type AccountDataSection } from "../../toolkit/account-data.ts";
import { shownLink } from "../../toolkit/links.ts";
import { deleteImagesOfUsers } from "./service.ts";

export const imageAccountData: AccountDataSection[] = [
  {
    // Generated images as links (`url`, stored as a path and exported absolute), not their bytes.
    key: "images",
    tables: ["images"],
    exportRows: async ({ services, knex, userId }) =>
      (await archiveRows(knex, "images", "user_id", [userId])).map((row) => ({ ...row, url: shownLink(services.config, row.url as string) })),
    // The files live outside the database; their rows, which name them, go with the users.
    beforePurge: async (services, userIds) => void (await deleteImagesOfUsers(services, userIds)),
  },
];
