// The social area's public surface: follows, likes, profiles and the feed.
import { defineArea } from "../../toolkit/area.ts";
import { socialAccountData } from "./account-data.ts";
import { handlers } from "./handlers.ts";

export const area = defineArea({ name: "social", handlers, accountData: socialAccountData, tables: ["follows", "likes", "persona_shares"] });
export { ShareOpenCounter } from "./share-opens.ts";
export { createShareTargets } from "./share-targets.ts";
export { likeCount } from "./service.ts";
