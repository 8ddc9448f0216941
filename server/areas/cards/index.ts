// The character cards area's public surface: card import and export, and lorebooks for replies.
import { defineArea } from "../../toolkit/area.ts";
import { cardAccountData } from "./account-data.ts";
import { handlers } from "./handlers.ts";

export { withCardContext, type CardContext } from "./lorebook.ts";
export { alternateGreetingsOf, cardContextFromRow, cardContextOf } from "./service.ts";
export { cardContextSql } from "./store.ts";

export const area = defineArea({ name: "cards", handlers, accountData: cardAccountData, tables: ["persona_cards", "card_avatars"] });
