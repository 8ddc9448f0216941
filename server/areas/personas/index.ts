// The personas area's public surface: personas, their instruction versions, greetings, avatars and trending.
import { defineArea } from "../../toolkit/area.ts";
import { personaAccountData } from "./account-data.ts";
import { avatarTasks } from "./avatar-job.ts";
import { personaTasks } from "./greeting-job.ts";
import { handlers } from "./handlers.ts";
import { trendingCrontab, trendingTasks } from "./trending.ts";

export {
  countPlanPersonas,
  createPersona,
  listOwnPersonas,
  namesOfPersonas,
  personaIdsOfCreator,
  requireOwnPersona,
  requirePublicPersona,
  requireVisiblePersona,
  updatePersona,
  visiblePersonasSql,
  findAnyPersona,
  setPersonaTakedown,
  changePersonaRating,
  type PersonaRow,
} from "./service.ts";
export { ratingsShownTo } from "./ratings.ts";
export { onlyLiveCreators } from "./service.ts";
export type { ContentRating } from "./store.ts";
export { activateVersion, activeVersionOf, createDraftVersion, listVersions, requireVersion, type InstructionVersionRow } from "./versions.ts";
export { toPersona } from "./views.ts";
export { findPersonaByModelName, modelNameOf, personaByModelNameSql } from "./model-names.ts";
export { personaFromJson } from "./store.ts";
export { settingsOver } from "./model-limits.ts";
export type { ModelSettings } from "./store.ts";
export { greetingNow } from "./greeting-job.ts";

export const area = defineArea({
  name: "personas",
  handlers,
  tasks: (services) => ({ ...personaTasks(services), ...avatarTasks(services), ...trendingTasks(services) }),
  crontab: trendingCrontab,
  accountData: personaAccountData,
  tables: ["personas", "instruction_versions", "persona_trending_scores", "persona_trending", "persona_activity_hourly"],
});
