import type { Request } from "express";
import { describe, expect, it } from "vitest";
import { clientAddressKey, clientIdentity } from "../../server/toolkit/http/client-identity.ts";

// Issue 31 M1: without a valid credential a request counts against its address; an IPv6 client
// walks its /64 at will, so the /64 is the key.
const request = (ip: string | undefined, principal?: { userId: string }) => ({ ip, principal }) as unknown as Request;

describe("the client's address as a counting key", () => {
  it("is an IPv4 address as it is, an IPv6 address by its /64, a mapped IPv4 address as the IPv4 address", () => {
    expect(clientAddressKey(request("203.0.113.7"))).toBe("203.0.113.7");
    expect(clientAddressKey(request("2001:db8:1:2:3:4:5:6"))).toBe("2001:db8:1:2::/64");
    expect(clientAddressKey(request("2001:db8:1:2:ffff::1"))).toBe("2001:db8:1:2::/64");
    expect(clientAddressKey(request("::ffff:198.51.100.4"))).toBe("198.51.100.4");
    expect(clientAddressKey(request(undefined))).toBe("unknown");
  });

  it("gives way to the user once a valid credential named one", () => {
    expect(clientIdentity(request("203.0.113.7", { userId: "u1" }))).toBe("user:u1");
    expect(clientIdentity(request("203.0.113.7"))).toBe("ip:203.0.113.7");
  });
});
