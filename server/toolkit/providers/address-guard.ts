import { lookup as dnsLookup } from "node:dns/promises";
import type { LookupFunction } from "node:net";
import ipaddr from "ipaddr.js";

// The SSRF guard of every URL the service fetches that it did not get from its own settings:
// webhook URLs (DECISIONS: Webhooks) and the links image providers answer. Only global unicast
// addresses may be reached; everything ipaddr.js puts in a special range (loopback, private, link-local, which holds the cloud
// metadata address 169.254.169.254, carrier-grade NAT, multicast, unspecified, unique-local,
// reserved, documentation, 6to4/Teredo/NAT64 forms that embed an IPv4 address) is refused.
// IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry. IPv6 forms that ipaddr.js
// calls unicast but that carry an IPv4 address are refused too (issue 31 L5): the deprecated
// IPv4-compatible block ::/96 as a whole ([::127.0.0.1] is ::7f00:1), and ISATAP interface
// identifiers whose IPv4 address is not itself allowed.

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Turns a host name into its addresses; swapped for a stub in tests so no name is ever looked up. */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

const systemResolver: HostResolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));

let resolver: HostResolver = systemResolver;

/** Replaces the resolver (tests); returns a function that puts the previous one back. */
export function useHostResolver(next: HostResolver): () => void {
  const previous = resolver;
  resolver = next;
  return () => {
    resolver = previous;
  };
}

export class BlockedAddressError extends Error {
  override name = "BlockedAddressError";
  readonly code = "EWEBHOOKBLOCKED";
}

/** RFC 4291's IPv4-compatible addresses, deprecated: nothing legitimate is reached through them. */
const IPV4_COMPATIBLE = ipaddr.parseCIDR("::/96");

/** The IPv4 address an ISATAP interface identifier (RFC 5214: `0:5efe:a.b.c.d`, `200:5efe:a.b.c.d`) carries. */
function isatapAddress(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const parts = address.parts;
  if ((parts[4] !== 0 && parts[4] !== 0x200) || parts[5] !== 0x5efe) return undefined;
  return new ipaddr.IPv4([parts[6]! >> 8, parts[6]! & 0xff, parts[7]! >> 8, parts[7]! & 0xff]);
}

/** Why `address` may not be reached (its range), or undefined for a global unicast address. */
export function forbiddenRange(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return "not an IP address";
  const parsed = ipaddr.process(address);
  const range = parsed.range();
  if (range !== "unicast") return range;
  if (parsed.kind() === "ipv6") {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.match(IPV4_COMPATIBLE)) return "ipv4Compatible";
    const embedded = isatapAddress(v6);
    if (embedded && embedded.range() !== "unicast") return `isatap ${embedded.range()}`;
  }
  return undefined;
}

/** An IP literal as URL hosts write them (`[::1]`), or undefined for a name. */
export function ipLiteral(hostname: string): string | undefined {
  const bare = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) ? bare : undefined;
}

/**
 * The addresses `hostname` stands for, every one of them allowed; throws `BlockedAddressError` when
 * any is not (a name with one private address among public ones is refused as a whole), and the
 * resolver's error when the name does not resolve.
 */
export async function allowedAddresses(hostname: string, allowPrivate: boolean): Promise<ResolvedAddress[]> {
  const literal = ipLiteral(hostname);
  const addresses = literal ? [{ address: literal, family: ipaddr.parse(literal).kind() === "ipv6" ? 6 : 4 } as ResolvedAddress] : await resolver(hostname);
  if (addresses.length === 0) throw Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" });
  if (!allowPrivate) {
    for (const { address } of addresses) {
      const range = forbiddenRange(address);
      if (range) throw new BlockedAddressError(`${hostname} resolves to ${address}, a ${range} address`);
    }
  }
  return addresses;
}

/**
 * A `lookup` for sockets to webhook receivers: the connection goes only to addresses checked here,
 * at connection time, so a name that changes its answer after registration (DNS rebinding) cannot
 * lead a delivery into the private network.
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return ((hostname: string, options: { family?: number | string; all?: boolean }, callback: (...args: unknown[]) => void) => {
    allowedAddresses(hostname, allowPrivate).then(
      (addresses) => {
        const wanted = options.family === 4 || options.family === "IPv4" ? 4 : options.family === 6 || options.family === "IPv6" ? 6 : 0;
        const usable = wanted ? addresses.filter((a) => a.family === wanted) : addresses;
        if (usable.length === 0) return callback(Object.assign(new Error(`${hostname} has no IPv${wanted} address`), { code: "ENOTFOUND" }));
        if (options.all) return callback(null, usable);
        return callback(null, usable[0]!.address, usable[0]!.family);
      },
      (error: unknown) => callback(error),
    );
  }) as LookupFunction;
}

/**
 * The registration check of a URL the service will call (a webhook, a user's model provider): an
 * absolute HTTPS URL (HTTP too where private addresses are allowed), whose host resolves and whose
 * every address is public unless `allowPrivate`. `refuse` makes the caller's error from a message;
 * `inspect` adds the caller's own checks of the parsed URL before its host is resolved. Every
 * connection is checked again when it is made.
 */
export async function checkOutboundUrl(raw: string, allowPrivate: boolean, refuse: (message: string) => Error, inspect?: (url: URL) => void): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse("must be an absolute URL");
  }
  if (url.protocol !== "https:" && !(allowPrivate && url.protocol === "http:")) throw refuse("must be an HTTPS URL");
  inspect?.(url);
  try {
    await allowedAddresses(url.hostname, allowPrivate);
  } catch (error) {
    if (error instanceof BlockedAddressError) throw refuse(`must not point to a loopback, private or link-local address (${error.message})`);
    throw refuse(`host ${url.hostname} does not resolve`);
  }
  return url;
}
