// The images area's public surface: generated images and the files they are kept in.
import { defineArea } from "../../toolkit/area.ts";
import { imageAccountData } from "./account-data.ts";
import { handlers } from "./handlers.ts";

export { blobKey, FILES_PATH, newFileName } from "./files.ts";
export { createImage, discardImage, imageFile } from "./service.ts";

export const area = defineArea({ name: "images", handlers, accountData: imageAccountData, tables: ["images"] });
