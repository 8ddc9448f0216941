import { createServer, type Server } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { forbiddenRange, useHostResolver, type ResolvedAddress } from "../../server/webhooks/address-guard.ts";
import { postOnce } from "../../server/webhooks/sender.ts";
import { expectError } from "../support/assertions.ts";
import { eventually } from "../support/chat.ts";
import { jsonHeaders, startTestService, type TestService } from "../support/service.ts";
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

const register = (url: string) =>
  service.fetch("/v1/webhooks", { method: "POST", headers: { ...jsonHeaders, ...user.auth }, body: JSON.stringify({ url, events: ["message.failed"] }) });

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
});

describe("registration", () => {
  it("refuses hostnames resolving to 127.0.0.1, ::1, 10.0.0.1, 169.254.169.254 (and mapped or mixed answers)", async () => {
    for (const host of ["loopback.example", "loopback6.example", "private.example", "metadata.example", "mapped.example", "mixed.example"]) {
      const body = await expectError(await register(`https://${host}/hooks`), 400, "invalid_request");
      expect(body.error.details.errors[0].path, host).toBe("/body/url");
    }
  });

  it("refuses IP literals of those ranges, plain HTTP and names that do not resolve", async () => {
    for (const url of ["https://127.0.0.1/h", "https://[::1]/h", "https://[::ffff:7f00:1]/h", "https://10.0.0.1/h", "https://169.254.169.254/latest/meta-data", "http://public.example/h", "https://nowhere.example/h"]) {
      await expectError(await register(url), 400, "invalid_request");
    }
    expect((await (await service.fetch("/v1/webhooks", { headers: user.auth })).json()).total).toBe(0);
  });

  it("accepts an HTTPS URL whose host resolves only to public addresses, and checks an updated URL too", async () => {
    const created = await createWebhook(service, user, { url: "https://public.example/hooks", events: ["message.failed"] });
    const moved = await service.fetch(`/v1/webhooks/${created.id}`, { method: "PUT", headers: { ...jsonHeaders, ...user.auth }, body: JSON.stringify({ url: "https://metadata.example/x" }) });
    await expectError(moved, 400, "invalid_request");
    await service.fetch(`/v1/webhooks/${created.id}`, { method: "DELETE", headers: user.auth });
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
    for (const url of [`https://loopback.example:${port}/`, `https://loopback6.example:${port}/`, `https://127.0.0.1:${port}/`, `https://[::ffff:127.0.0.1]:${port}/`, `https://private.example/`, `https://metadata.example/`]) {
      const result = await postOnce(new URL(url), "{}", {}, options);
      expect(result, url).toMatchObject({ ok: false, status: null, error: expect.stringMatching(/^address not allowed/) });
    }
    expect(connections).toBe(0);
    expect(await postOnce(new URL("http://public.example/"), "{}", {}, options)).toMatchObject({ ok: false, error: "HTTPS required" });
  });
});
