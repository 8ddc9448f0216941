import type { AccountDataSection } from "./account-data.ts";
import { authAccountData } from "./auth/account-data.ts";
import { billingAccountData } from "./billing/account-data.ts";
import { cardAccountData } from "./cards/account-data.ts";
import { conversationAccountData } from "./conversations/account-data.ts";
import { generationAccountData } from "./conversations/generation-account-data.ts";
import { imageAccountData } from "./images/account-data.ts";
import { integrationsAccountData } from "./integrations/account-data.ts";
import { knowledgeAccountData } from "./knowledge/account-data.ts";
import { marketplaceAccountData } from "./marketplace/account-data.ts";
import { personaAccountData } from "./personas/account-data.ts";
import { roomAccountData } from "./rooms/account-data.ts";
import { socialAccountData } from "./social/account-data.ts";
import { studioAccountData } from "./studio/account-data.ts";
import { webhookAccountData } from "./webhooks/account-data.ts";

/**
 * Every area's part of the data export and of the account purge, in archive order. An area adds
 * its sections here as it lands; test/auth/account-sections.test.ts fails while any user-owned
 * table of the catalog is claimed by none.
 */
export const accountDataSections: readonly AccountDataSection[] = [
  ...personaAccountData,
  ...cardAccountData,
  ...conversationAccountData,
  ...generationAccountData,
  ...knowledgeAccountData,
  ...studioAccountData,
  ...marketplaceAccountData,
  ...socialAccountData,
  ...roomAccountData,
  ...authAccountData,
  ...webhookAccountData,
  ...integrationsAccountData,
  ...imageAccountData,
  ...billingAccountData,
];
