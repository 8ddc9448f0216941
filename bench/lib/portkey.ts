// Portkey's AI Gateway (`@portkey-ai/gateway`, its own package in bench/gateways), the peer that
// `npm run bench:chat` compares Persona's relay with (issue 37). It runs as its users start it:
// the package's Node server in a child process, routing an OpenAI-compatible request by headers.
// bench/gateways/package.json overrides @hono/node-server to 1.14.1: with the 1.19 that 1.15.2's
// range resolves to, every streamed completion fails (500, `TypeError: immutable` in its log).
// Its "Failed to find Response internal state key" at start is 1.14.1 on Node 24, and harmless.
//
// Portkey sleeps 25 ms before it relays the first chunk of every streamed reply
// (src/handlers/streamHandler.ts line 184 in v1.15.2, `readStream`: `if (isFirstChunk) … setTimeout(resolve, 25)`;
// build/start-server.js, byte 411311 of its second line, as published). No environment variable,
// header or config field turns it off, so the figures include it, as every user of the package gets it.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { freePort, startNode, type Child } from "./processes.ts";

const SERVER = fileURLToPath(new URL("../gateways/node_modules/@portkey-ai/gateway/build/start-server.js", import.meta.url));

/** Starts the gateway on a free loopback port; `upstreamBaseUrl` is where requests will be routed (e.g. the fake's `…/v1`). */
export async function startPortkey(upstreamBaseUrl: string): Promise<Child> {
  if (!existsSync(SERVER)) {
    throw new Error("Portkey's gateway is not installed (bench/gateways/node_modules is missing): run `npm run bench:gateways:install`");
  }
  const port = await freePort();
  // `--port=` is the only way to set its port; `--headless` leaves out the log viewer UI a deployment does not serve.
  // Custom hosts on private addresses are refused unless trusted: the default list trusts 127.0.0.1 and
  // localhost, but an inherited TRUSTED_CUSTOM_HOSTS would replace it, so the upstream's host is named here.
  return startNode("Portkey gateway", [SERVER, `--port=${port}`, "--headless"], { TRUSTED_CUSTOM_HOSTS: new URL(upstreamBaseUrl).hostname }, `http://127.0.0.1:${port}`, "/");
}

/**
 * The headers that route a request through the gateway to an OpenAI-compatible upstream (an OpenAI
 * client's `defaultHeaders`): the provider, and the upstream's base URL with its `/v1`, to which
 * Portkey appends `/chat/completions`. The client's bearer token is passed on as the upstream's key.
 * (`x-portkey-config: {"provider":"openai","custom_host":…}` routes the same in 1.15.2.)
 */
export function portkeyRoutingHeaders(upstreamBaseUrl: string): Record<string, string> {
  return { "x-portkey-provider": "openai", "x-portkey-custom-host": upstreamBaseUrl };
}

/** A raw fetch of a chat completion through the gateway; `body` is the OpenAI request (JSON text or an object), `stream: true` for a stream. */
export function portkeyStreamRequest(portkeyUrl: string, upstreamBaseUrl: string, body: string | object): { url: string; init: RequestInit } {
  return {
    url: `${portkeyUrl}/v1/chat/completions`,
    init: {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer bench", ...portkeyRoutingHeaders(upstreamBaseUrl) },
      body: typeof body === "string" ? body : JSON.stringify(body),
    },
  };
}
