import { findAccountById, saveShowMature } from "../auth/index.ts";
import { conflict, unauthorized } from "../../toolkit/http/error-catalogue.ts";
import type { Services } from "../../toolkit/services.ts";

// The account's content settings (issue 41, docs/adr/0353): whether it sees content rated
// `mature`. The choice is kept on the account (auth); what lists show follows the personas area's
// one rule (ratingsShownTo: the account opted in and the server allows mature content at all).

export interface ContentSettings {
  show_mature: boolean;
  mature_allowed: boolean;
}

const matureAllowed = (services: Services) => services.config.safety.matureContent !== "off";

export async function contentSettings(services: Services, userId: string): Promise<ContentSettings> {
  const account = await findAccountById(services, userId);
  if (!account || account.deleted_at) throw unauthorized("The account no longer exists");
  return { show_mature: account.show_mature === true, mature_allowed: matureAllowed(services) };
}

/** Opting in is 409 on a server that does not allow mature content; opting out always works. */
export async function changeContentSettings(services: Services, userId: string, showMature: boolean): Promise<ContentSettings> {
  if (showMature && !matureAllowed(services)) throw conflict("This server does not allow mature content (MATURE_CONTENT=off)");
  const saved = await saveShowMature(services, userId, showMature);
  if (saved === undefined) throw unauthorized("The account no longer exists");
  return { show_mature: saved, mature_allowed: matureAllowed(services) };
}
