// The embeds area's public surface: a public persona embedded on its owner's own website (issue 36
// item 3, docs/design/embeds.md). The owner's settings and the anonymous visitors' guest chat are
// operations of the contract (spec/embeds.tsp); the loader script and the chat page it frames are
// routes of their own (routes.ts), mounted by the app beside the built-in pages.
import { defineArea } from "../../toolkit/area.ts";
import { embedAccountData } from "./account-data.ts";
import { handlers } from "./handlers.ts";
import { embedCrontab, embedTasks } from "./jobs.ts";

export { embedRoutes } from "./routes.ts";
export { EMBED_PATHS } from "./paths.ts";

export const area = defineArea({
  name: "embeds",
  handlers,
  tasks: (services) => embedTasks(services),
  crontab: embedCrontab,
  accountData: embedAccountData,
  tables: ["persona_embeds", "embed_guests", "embed_conversations", "embed_daily_usage"],
});
