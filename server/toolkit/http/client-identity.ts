import type { Request } from "express";
import ipaddr from "ipaddr.js";
import { callerOf } from "./principal.ts";

/**
 * Who is calling, as a stable string for per-client state (rate-limit counters, idempotency keys):
 * the user once a valid credential named one, otherwise the client's address. Never the
 * credential string itself: a made-up credential is free to make, so counting by it would give
 * each one a fresh allowance and a row of its own (issue 31 M1).
 */
export function clientIdentity(req: Request): string {
  const principal = callerOf(req);
  if (principal) return `user:${principal.userId}`;
  return `ip:${clientAddressKey(req)}`;
}

/**
 * The client's address as a counting key: an IPv4 address as it is, an IPv6 address by its /64
 * (one subscriber's usual allocation, which a client can walk through at will), an IPv4 address
 * mapped into IPv6 as the IPv4 address.
 */
export function clientAddressKey(req: Request): string {
  const ip = req.ip;
  if (!ip) return "unknown";
  // An IPv4 address is its own key: no parse on the path of every credential-free request.
  if (!ip.includes(":") || !ipaddr.isValid(ip)) return ip;
  const address = ipaddr.process(ip);
  if (address.kind() === "ipv4") return address.toString();
  const parts = (address as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16));
  return `${parts.join(":")}::/64`;
}
