import { readdirSync, readFileSync, statSync } from "node:fs";
import { createServer, type Server } from "node:net";
import type { AddressInfo } from "node:net";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { downloadImageLink, providerIsLocal } from "../../server/toolkit/providers/images/download.ts";
import { flatten } from "../fuzz/arbitrary.ts";
import { operations, type FuzzOperation, type Schema } from "../fuzz/contract.ts";
import { root } from "../support/contract.ts";
import { call, useWorld, validRequest } from "./support.ts";

// API7 Server Side Request Forgery (issue 23 item 2). The one guard is server/toolkit/providers/address-guard.ts
// (tested in test/webhooks/ssrf.test.ts: ranges, IPv4-mapped and 6to4 forms, DNS rebinding at
// connection time). Here: (1) every place in server/ that opens an outbound connection is known,
// with where its destination comes from; (2) every URL a client can give the service (each
// request-body field of format `uri` in the contract) is either refused by the guard or never
// fetched; (3) the fuzzer runs with every connection beyond loopback refused and recorded
// (test/fuzz/no-egress.ts), and fails if the service tried one.

/** Where each module that opens outbound connections gets its destination from. */
const OUTBOUND: Record<string, string> = {
  "server/areas/webhooks/sender.ts": "a client's webhook URL: every connection resolves through the guard (guardedLookup)",
  "server/toolkit/providers/llm/guarded-fetch.ts": "a user's provider connection URL (bring your own key): every connection resolves through the guard (guardedLookup)",
  "server/toolkit/providers/openai-client.ts": "the operator's OPENAI_BASE_URL (setting), never a client's input",
  "server/toolkit/providers/blobs/s3.ts": "the operator's S3_ENDPOINT / bucket (settings)",
  "server/toolkit/providers/email/smtp.ts": "the operator's SMTP_URL (setting)",
  "server/toolkit/providers/images/download.ts": "the image link an image provider answers: through the guard (private addresses only when the provider itself is local)",
  "server/toolkit/providers/payments/stripe.ts": "the operator's STRIPE_API_URL (setting; Stripe's own API by default)",
  "server/areas/integrations/platforms/telegram.ts": "the operator's TELEGRAM_API_URL (setting)",
  "server/areas/integrations/platforms/telegram-polling.ts": "the operator's TELEGRAM_API_URL (setting)",
  "server/areas/integrations/platforms/slack.ts": "the operator's SLACK_API_URL (setting)",
  "server/areas/integrations/platforms/discord.ts": "the operator's DISCORD_API_URL (setting)",
  "server/areas/integrations/gateway/discord-session.ts": "the gateway address the operator's DISCORD_API_URL (setting) answers",
};

const OUTBOUND_CALL = /\bfetch\(|\brequest as https?Request\b|\bhttps?Request\(|\bhttps?\.(request|get)\(|\bnet\.connect\(|\btls\.connect\(|new OpenAI\(|new S3Client\(|createTransport\(|from "undici"|new Stripe\(|new Api\(|new REST\(|new WebClient\(|new WebSocketManager\(|new WebSocket\(/;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith(".ts") ? [path] : [];
  });
}

const uriFields = (op: FuzzOperation): string[] => {
  if (!op.body) return [];
  const properties = (flatten(op.body.schema).properties ?? {}) as Record<string, Schema>;
  return Object.entries(properties)
    .filter(([, schema]) => flatten(schema).format === "uri")
    .map(([name]) => name);
};

describe("API7: outbound connections", () => {
  it("are opened only by the modules listed here, each with the source of its destination", () => {
    const found = sources(join(root, "server"))
      .filter((file) => OUTBOUND_CALL.test(readFileSync(file, "utf8")))
      .map((file) => relative(root, file));
    expect(found.sort()).toEqual(Object.keys(OUTBOUND).sort());
  });

  it("route every destination that is not an operator's setting through the guard", () => {
    const guarded = Object.keys(OUTBOUND).filter((file) => !/setting/.test(OUTBOUND[file]!));
    for (const file of guarded) expect(readFileSync(join(root, file), "utf8"), file).toMatch(/guardedLookup\(/);
  });
});

describe("API7: the links an image provider answers", () => {
  let trap: Server;
  let connections = 0;
  let port = 0;
  beforeAll(async () => {
    trap = createServer((socket) => {
      connections++;
      socket.on("error", () => undefined);
      socket.write("HTTP/1.1 200 OK\r\ncontent-length: 21000000\r\n\r\n");
      socket.end(Buffer.alloc(21_000_000, 1));
    });
    await new Promise<void>((resolve) => trap.listen(0, "127.0.0.1", resolve));
    port = (trap.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => trap?.close(resolve));
  });

  it("are not fetched from loopback, private or metadata addresses when the provider is on the internet", async () => {
    // [::127.0.0.1] and [::a9fe:a9fe]: IPv4-compatible forms (issue 31 L5).
    for (const link of [`http://127.0.0.1:${port}/x.png`, "http://169.254.169.254/latest/meta-data/", "http://[::ffff:10.0.0.1]/x.png", `http://[::127.0.0.1]:${port}/x.png`, "http://[::a9fe:a9fe]/latest/meta-data/", "file:///etc/passwd", "not a url"]) {
      await expect(downloadImageLink(link, { allowPrivate: false, timeoutMs: 2000 }), link).rejects.toThrow(/not allowed|not an http/);
    }
    expect(connections).toBe(0);
  });

  it("are read up to a size bound, also from a local provider", async () => {
    await expect(downloadImageLink(`http://127.0.0.1:${port}/x.png`, { allowPrivate: true, timeoutMs: 5000, maxBytes: 1_000_000 })).rejects.toThrow(/larger than/);
    expect(connections).toBe(1);
  });

  it("count as local only for a provider on loopback or a private network", () => {
    expect([undefined, "https://api.openai.com/v1", "http://127.0.0.1:8080/v1", "http://localhost:11434/v1", "http://10.1.2.3/v1"].map(providerIsLocal)).toEqual([false, false, true, true, true]);
  });
});

describe("API7: URLs a client gives the service", () => {
  const fixture = useWorld({ strangers: true, env: { WEBHOOKS_ALLOW_PRIVATE_URLS: "false" } });
  let trap: Server;
  let connections = 0;
  let trapUrl = "";

  beforeAll(async () => {
    trap = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => trap.listen(0, "127.0.0.1", resolve));
    trapUrl = `https://127.0.0.1:${(trap.address() as AddressInfo).port}/ssrf`;
  });
  afterAll(async () => {
    await new Promise((resolve) => trap?.close(resolve));
  });

  const withUrls = operations.filter((op) => uriFields(op).length);

  it("come from these fields of the contract", () => {
    expect(withUrls.map((op) => `${op.operationId}: ${uriFields(op).join(", ")}`).length).toBeGreaterThan(3);
  });

  it("pointing at loopback are refused by the guard (webhooks) or never fetched (every other field)", async () => {
    const { service, world } = fixture;
    const answers: string[] = [];
    for (const op of withUrls) {
      const request = validRequest(op, world.a, op.scope ? world.a.user.auth : {}, 31);
      const body = JSON.parse(new TextDecoder().decode(request.body).replace(/^(?!\{).*/s, "{}")) as Record<string, unknown>;
      if (request.headers["content-type"]?.startsWith("application/json")) {
        for (const field of uriFields(op)) body[field] = trapUrl;
        const answer = await call(service, { ...request, body: new TextEncoder().encode(JSON.stringify(body)) });
        answers.push(`${op.operationId} ${answer.status}`);
        if (op.operationId.startsWith("webhooks_")) expect([400, 404], `${op.operationId}: ${answer.text}`).toContain(answer.status);
      }
    }
    // Jobs (avatars, webhook deliveries) run within a second or two of the request.
    await new Promise((wait) => setTimeout(wait, 3000));
    expect(connections, answers.join(", ")).toBe(0);
  }, 120_000);
});
