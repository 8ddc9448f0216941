import { createServer, type Server } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { forbiddenRange, useHostResolver, type ResolvedAddress } from "../../server/toolkit/providers/address-guard.ts";
import { postOnce } from "../../server/areas/webhooks/sender.ts";
import { expectError } from "../support/assertions.ts";
import { eventually } from "../support/wait.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { createWebhook, deliveries, emit } from "./helpers.ts";

// The SSRF guard with private URLs NOT allowed. Names resolve through a stub: nothing is looked up,
// and nothing is sent anywhere but loopback (where a bare TCP server counts connection attempts).

const names: Record<string, string[]> = {
  "loopback.example": ["127.0.0.1"],
  "loopback6.example": ["::1"],
  "private.example": ["10.0.0.1"],
  "metadata.example": ["169.254.169.254"],
  "mapped.example": ["::ffff:127.0.0.1"],
  "compatible.example": ["::7f00:1"],
  "mixed.example": ["93.184.216.34", "10.0.0.1"],
  "public.example": ["93.184.216.34"],
};
const stub = async (hostname: string): Promise<ResolvedAddress[]> => {
  const found = names[hostname];
  if (!found) throw Object.assign(new Error(`stub: ${hostname} unknown`), { code: "ENOTFOUND" });
  return found.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
};

let service: TestService;
let user: TestUser;
let restore: () => void;
let tcp: Server;
let connections = 0;

beforeAll(async () => {
  restore = useHostResolver(stub);
  tcp = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => tcp.listen(0, "127.0.0.1", resolve));
  service = await startTestService({ env: { WEBHOOKS_TIMEOUT_MS: "1000", WEBHOOKS_RETRY_BASE_MS: "50" } });
  user = await registerUser(service);
});
afterAll(async () => {
  restore?.();
  await new Promise((resolve) => tcp?.close(resolve));
  await service?.close();
});

const register = (url: string) => service.clientFor(user).POST("/v1/webhooks", { body: { url, events: ["message.failed"] } });
const listed = async () => (await service.clientFor(user).GET("/v1/webhooks")).data!;

describe("address classification", () => {
  it("refuses loopback, private, link-local, metadata, multicast, unspecified and mapped forms, IPv4 and IPv6", () => {
    const refused = [
      "127.0.0.1", "127.8.9.10", "::1", "10.0.0.1", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::",
      "224.0.0.1", "255.255.255.255", "ff02::1", "fe80::1", "fd00::1", "fd00:ec2::254", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
      "::ffff:169.254.169.254", "64:ff9b::a00:1", "2002:a00:1::", "192.0.2.1",
    ];
    for (const address of refused) expect(forbiddenRange(address), address).toBeDefined();
    for (const address of ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:93.184.216.34"]) expect(forbiddenRange(address), address).toBeUndefined();
  });

  // FINDING (issue 31 L5), fixed: the deprecated IPv4-compatible form (::/96) was "unicast" to
  // ipaddr.js, so ::7f00:1 (written [::127.0.0.1] in a URL) passed as a global address.
  it("refuses every IPv6 form that embeds an IPv4 address unless the form and the address are both public", () => {
    const refused = [
      // IPv4-compatible (::/96, deprecated by RFC 4291): refused whatever it carries.
      "::7f00:1", "::127.0.0.1", "::a9fe:a9fe", "::169.254.169.254", "::a00:1", "::5db8:d822",
      // IPv4-mapped (::ffff:0:0/96) and IPv4-translated (::ffff:0:0:0/96) forms of non-public addresses.
      "::ffff:7f00:1", "::ffff:a9fe:a9fe", "::ffff:0:7f00:1", "::ffff:0:5db8:d822",
      // NAT64 (64:ff9b::/96, 64:ff9b:1::/48), 6to4 (2002::/16), Teredo (2001::/32): translation forms, refused.
      "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::a00:1", "2002:7f00:1::", "2002:a9fe:a9fe::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2",
      // ISATAP interface identifiers (::0:5efe:a.b.c.d, ::200:5efe:a.b.c.d) carrying a non-public address, under a global prefix.
      "2606:4700::5efe:7f00:1", "2606:4700::200:5efe:a9fe:a9fe", "2606:4700::5efe:a00:1",
    ];
    for (const address of refused) expect(forbiddenRange(address), address).toBeDefined();
    for (const address of ["2606:4700::5efe:5db8:d822", "2606:4700:4700::64", "::ffff:8.8.8.8"]) expect(forbiddenRange(address), address).toBeUndefined();
  });
});

describe("registration", () => {
  it("refuses hostnames resolving to 127.0.0.1, ::1, 10.0.0.1, 169.254.169.254 (and mapped or mixed answers)", async () => {
    for (const host of ["loopback.example", "loopback6.example", "private.example", "metadata.example", "mapped.example", "compatible.example", "mixed.example"]) {
      const body = await expectError(await register(`https://${host}/hooks`), 400, "invalid_request");
      expect(body.error.details.errors[0].path, host).toBe("/body/url");
    }
  });

  it("refuses IP literals of those ranges, plain HTTP and names that do not resolve", async () => {
    for (const url of ["https://127.0.0.1/h", "https://[::1]/h", "https://[::ffff:7f00:1]/h", "https://10.0.0.1/h", "https://169.254.169.254/latest/meta-data", "http://public.example/h", "https://nowhere.example/h"]) {
      await expectError(await register(url), 400, "invalid_request");
    }
    expect((await listed()).total).toBe(0);
  });

  it("refuses IPv4-compatible and other embedding IPv6 literals of loopback and metadata addresses (issue 31 L5)", async () => {
    for (const url of ["https://[::7f00:1]/", "https://[::127.0.0.1]/", "https://[::a9fe:a9fe]/", "https://[::169.254.169.254]/latest", "https://[64:ff9b::a9fe:a9fe]/", "https://[2002:7f00:1::]/"]) {
      const body = await expectError(await register(url), 400, "invalid_request");
      expect(body.error.details.errors[0].path, url).toBe("/body/url");
    }
    expect((await listed()).total).toBe(0);
  });

  it("accepts an HTTPS URL whose host resolves only to public addresses, and checks an updated URL too", async () => {
    const created = await createWebhook(service, user, { url: "https://public.example/hooks", events: ["message.failed"] });
    const moved = await service.clientFor(user).PUT("/v1/webhooks/{id}", { params: { path: { id: created.id } }, body: { url: "https://metadata.example/x" } });
    await expectError(moved, 400, "invalid_request");
    await service.clientFor(user).DELETE("/v1/webhooks/{id}", { params: { path: { id: created.id } } });
  });
});

describe("delivery", () => {
  it("checks the address actually connected to: a name that rebinds to loopback after registration is never reached", async () => {
    const { port } = tcp.address() as AddressInfo;
    const created = await createWebhook(service, user, { url: `https://public.example:${port}/hooks`, events: ["message.failed"] });
    names["public.example"] = ["127.0.0.1"];
    try {
      await emit(service, user, "message.failed");
      const log = await eventually(async () => {
        const page = await deliveries(service, user, created.id);
        return page.data[0]?.status === "failed" && page;
      });
      expect(log.data[0]).toMatchObject({ attempts: 4, response_status: null });
      expect(log.data[0]!.error).toMatch(/^address not allowed: public\.example resolves to 127\.0\.0\.1/);
      expect(connections).toBe(0);
    } finally {
      names["public.example"] = ["93.184.216.34"];
    }
  });

  it("refuses before connecting when sending directly to blocked names or literals", async () => {
    const { port } = tcp.address() as AddressInfo;
    const options = { timeoutMs: 1000, allowPrivate: false };
    for (const url of [`https://loopback.example:${port}/`, `https://loopback6.example:${port}/`, `https://127.0.0.1:${port}/`, `https://[::ffff:127.0.0.1]:${port}/`, `https://[::127.0.0.1]:${port}/`, `https://compatible.example:${port}/`, `https://private.example/`, `https://metadata.example/`]) {
      const result = await postOnce(new URL(url), "{}", {}, options);
      expect(result, url).toMatchObject({ ok: false, status: null, error: expect.stringMatching(/^address not allowed/) });
    }
    expect(connections).toBe(0);
    expect(await postOnce(new URL("http://public.example/"), "{}", {}, options)).toMatchObject({ ok: false, error: "HTTPS required" });
  });
});
