// The embeds area's public surface: a public persona embedded on its owner's own website (issue 36
// item 3, docs/design/embeds.md). All of it is operations of the contract (spec/embeds.tsp): the
// owner's settings, the anonymous visitors' guest chat, and the loader script, the chat page it
// frames and the page's script, which are pages for browsers (page-handlers.ts) as the built-in
// pages are.
import { defineArea } from "../../toolkit/area.ts";
import { embedAccountData } from "./account-data.ts";
import { handlers } from "./handlers.ts";
import { embedCrontab, embedTasks } from "./jobs.ts";

export { EMBED_PATHS } from "./paths.ts";

export const area = defineArea({
  name: "embeds",
  handlers,
  tasks: (services) => embedTasks(services),
  crontab: embedCrontab,
  accountData: embedAccountData,
  tables: ["persona_embeds", "embed_guests", "embed_conversations", "embed_daily_usage"],
});
