import { archiveRows, type AccountDataSection } from "../../toolkit/account-data.ts";
import { deleteImagesOfUsers } from "./service.ts";

export const imageAccountData: AccountDataSection[] = [
  {
    // Generated images as links (`url`), not their bytes.
    key: "images",
    tables: ["images"],
    exportRows: ({ knex, userId }) => archiveRows(knex, "images", "user_id", [userId]),
    // The files live outside the database; their rows, which name them, go with the users.
    beforePurge: async (services, userIds) => void (await deleteImagesOfUsers(services, userIds)),
  },
];
