import type { HandlerMap } from "./http/router.ts";
import { handlers as account } from "./auth/account/handlers.ts";
import { handlers as apiKeys } from "./auth/api-keys/handlers.ts";
import { handlers as oauth } from "./auth/oauth/handlers.ts";
import { handlers as sessions } from "./auth/sessions/handlers.ts";
import { handlers as ops } from "./ops/handlers.ts";
import { handlers as knowledge } from "./knowledge/handlers.ts";
import { handlers as conversations } from "./conversations/handlers.ts";
import { handlers as conversationTree } from "./conversations/tree-handlers.ts";
import { handlers as personas } from "./personas/handlers.ts";
import { handlers as cards } from "./cards/handlers.ts";
import { handlers as webhooks } from "./webhooks/handlers.ts";
import { handlers as voice } from "./voice/handlers.ts";
import { handlers as images } from "./images/handlers.ts";
import { handlers as social } from "./social/handlers.ts";
import { handlers as rooms } from "./rooms/handlers.ts";
import { handlers as marketplace } from "./marketplace/handlers.ts";
import { handlers as studio } from "./studio/handlers.ts";
import { handlers as billing } from "./billing/handlers.ts";
import { handlers as integrations } from "./integrations/handlers.ts";
import { handlers as openai } from "./openai/handlers.ts";

/**
 * The handler of every operation in the contract. An area that is not built yet answers 501
 * `not_implemented` for each of its operations; the README's status table lists which are live.
 */
export const handlers: HandlerMap = {
  ...ops,
  ...sessions,
  ...apiKeys,
  ...account,
  ...oauth,
  ...personas,
  ...cards,
  ...conversations,
  ...conversationTree,
  ...knowledge,
  ...marketplace,
  ...voice,
  ...social,
  ...rooms,
  ...images,
  ...studio,
  ...billing,
  ...integrations,
  ...openai,
  ...webhooks,
};
