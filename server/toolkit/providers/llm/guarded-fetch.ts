import { Agent } from "undici";
import { BlockedAddressError, forbiddenRange, guardedLookup, ipLiteral } from "../address-guard.ts";

/**
 * What a user's own provider connection is fetched with: a dispatcher whose connections resolve
 * names through the SSRF guard (address-guard.ts), at connection time, so a name that changes its
 * answer after registration (DNS rebinding) cannot lead a reply into the private network. One per
 * setting, shared by every connection.
 */
const agents = new Map<boolean, Agent>();

export function guardedFetchOptions(allowPrivate: boolean): Record<string, unknown> {
  let agent = agents.get(allowPrivate);
  if (!agent) agents.set(allowPrivate, (agent = new Agent({ connect: { lookup: guardedLookup(allowPrivate) } })));
  return { dispatcher: agent };
}

/**
 * An IP literal is connected to without a lookup: checked here, before the call (a connection
 * registered while private addresses were allowed, used after they no longer are).
 */
export function refusedLiteral(baseUrl: string, allowPrivate: boolean): BlockedAddressError | undefined {
  if (allowPrivate) return undefined;
  const literal = ipLiteral(new URL(baseUrl).hostname);
  const range = literal ? forbiddenRange(literal) : undefined;
  return range ? new BlockedAddressError(`${literal} is a ${range} address`) : undefined;
}
