import { createHmac, randomBytes } from "node:crypto";
import { registerOAuthClient } from "../../server/areas/auth/oauth/clients.ts";
import { outboxMails } from "../support/outbox.ts";
import type { TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { until } from "../support/wait.ts";

// The fixtures the fuzzer and the security matrix act on, made through the API as a client would:
// for each of two users a private and a public persona, a conversation with messages, a knowledge
// document, a webhook with a delivery, a room with the other user in it, an instruction version and
// a variant, a marketplace listing, a share link, the public persona embedded on a site
// (`EMBED_ORIGIN`), a generated image, API keys (one revoked), a second login, and a data export
// link. Each step is skipped when its area answers otherwise
// (not live yet, or refusing), so the world grows as areas land. Path and body fields are filled
// from it by name (`fixtureKey`): `personas`, `persona_id`, `doc_id`, `rooms`, `user_id`, `embed`...

/** The site the world's embedded persona allows: a request without its origin reaches the origin check (403). */
export const EMBED_ORIGIN = "https://shop.example";

export interface Actor {
  user: TestUser;
  /** Fixture values by name. */
  values: Record<string, string[]>;
  /** Unique text in every private thing of this user, which must never reach another user. */
  marker: string;
  /** Ids of this user's private resources, which must never reach another user either. */
  privateIds: string[];
  revokedKey: string;
  unsignedJwt: string;
  foreignJwt: string;
}

export interface World {
  a: Actor;
  b: Actor;
  /** Operations that answered something unexpected while the world was built (for the report). */
  skipped: string[];
}

type Json = Record<string, unknown> & { id?: string };

interface Call {
  status: number;
  json: Json;
}

function jwtWith(claims: Record<string, unknown>, header: Record<string, unknown>, secret?: string): string {
  const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const unsigned = `${part(header)}.${part(claims)}`;
  return secret ? `${unsigned}.${createHmac("sha256", secret).update(unsigned).digest("base64url")}` : `${unsigned}.`;
}

const lastSegment = (url: unknown) => (typeof url === "string" ? decodeURIComponent(new URL(url, "http://x").pathname.split("/").pop() ?? "") : "");

/** A streamed send read to its end; its generation id (the `start` event), for the generation operations (issue 21). */
async function streamedGeneration(service: TestService, user: TestUser, conversationId: string, content: string): Promise<string | undefined> {
  const response = await service.fetch(`/v1/conversations/${conversationId}/messages/stream`, {
    method: "POST",
    headers: { ...user.auth, "content-type": "application/json" },
    body: JSON.stringify({ content }),
  });
  if (response.status !== 200) return undefined;
  return /event: start\ndata: (\{.*\})/.exec(await response.text())?.[1]?.match(/"generation_id":"([^"]+)"/)?.[1];
}

/** Makes one user's fixtures; `receiverUrl` is a loopback webhook receiver. */
async function makeActor(service: TestService, receiverUrl: string, skipped: string[], label: string): Promise<Actor> {
  const user = await registerUser(service);
  const marker = `secret-${label}-${randomBytes(6).toString("hex")}`;
  const values: Record<string, string[]> = {};
  const privateIds: string[] = [];
  const put = (name: string, value: unknown, secret = false) => {
    if (typeof value !== "string" || !value) return;
    (values[name] ??= []).push(value);
    if (secret) privateIds.push(value);
  };
  const call = async (what: string, method: string, path: string, body?: unknown, headers: Record<string, string> = user.auth): Promise<Call | undefined> => {
    const response = await service.fetch(path, {
      method,
      headers: { ...headers, ...(body instanceof FormData || body === undefined ? {} : { "content-type": "application/json" }) },
      body: body instanceof FormData ? body : body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (response.headers.get("content-type") ?? "").includes("json") ? ((await response.json()) as Json) : {};
    if (response.status >= 300) {
      skipped.push(`${what}: ${response.status} ${JSON.stringify(json).slice(0, 200)}`);
      return undefined;
    }
    return { status: response.status, json };
  };

  const claims = JSON.parse(Buffer.from(user.accessToken.split(".")[1]!, "base64url").toString()) as Record<string, unknown>;
  put("email", user.email);
  put("password", user.password);
  put("username", user.username);
  put("user_id", user.id);
  for (const model of service.services.config.llm.models) put("model", model);

  // The webhook and the export first: their delivery and mail are made by jobs while the rest is built.
  const webhook = await call("webhook", "POST", "/v1/webhooks", { url: `${receiverUrl}?${marker}`, events: ["conversation.created", "message.created"] });
  put("webhooks", webhook?.json.id, true);
  const exported = await call("data export", "POST", "/v1/auth/export-data");
  // A provider connection of their own (issue 40), which a persona may name; at the loopback
  // receiver, where a reply on it would go (a world's service allows private provider addresses).
  const connection = await call("provider connection", "POST", "/v1/provider-connections", { name: `Provider ${label}`, base_url: `${new URL(receiverUrl).origin}/provider/v1`, api_key: `sk-${marker}` });
  put("provider_connection_id", connection?.json.id, true);

  const persona = await call("private persona", "POST", "/v1/personas", {
    name: `Private ${label}`,
    instructions: `You are private. ${marker}`,
    description: `private ${marker}`,
    greeting_message: `Hello from ${marker}`,
    avatar_url: "https://cdn.persona.example/avatars/fixture.png",
    is_public: false,
  });
  put("personas", persona?.json.id, true);
  put("persona_id", persona?.json.id, true);
  put("persona_ids", persona?.json.id, true);
  const open = await call("public persona", "POST", "/v1/personas", {
    name: `Public ${label}`,
    instructions: `You are public. ${marker}`,
    description: "A public persona",
    greeting_message: "Hello!",
    avatar_url: "https://cdn.persona.example/avatars/public.png",
    is_public: true,
    category: "tutor",
  });
  const publicId = open?.json.id;
  if (publicId) values.public_persona = [publicId];

  if (persona) {
    const conversation = await call("conversation", "POST", "/v1/conversations", { persona_id: persona.json.id, title: `chat ${marker}` });
    put("conversations", conversation?.json.id, true);
    put("conversation_id", conversation?.json.id, true);
    if (conversation) await call("message", "POST", `/v1/conversations/${conversation.json.id}/messages`, { content: `Tell me about ${marker}` });
    if (conversation) put("generation_id", await streamedGeneration(service, user, String(conversation.json.id), `And more about ${marker}`), true);
    const form = new FormData();
    form.append("file", new Blob([`Fixture notes.\n\nThe code word is ${marker}.\n`], { type: "text/plain" }), "notes.txt");
    const doc = await call("document", "POST", `/v1/knowledge/${persona.json.id}/documents`, form);
    put("doc_id", doc?.json.id, true);
    // Processed before anyone reads it: a snapshot taken while it is processing differs from the next.
    if (doc) {
      await until("the fixture document is processed", async () => {
        const read = await call("document", "GET", `/v1/knowledge/${persona.json.id}/documents/${doc.json.id}`);
        return read?.json.status !== "processing";
      });
    }
    const version = await call("version", "POST", `/v1/studio/${persona.json.id}/versions`, { instructions: `Version two. ${marker}`, changelog: "fixture" });
    put("version_id", version?.json.id, true);
    const variant = await call("variant", "POST", `/v1/studio/${persona.json.id}/variants`, { name: "B", instructions: `Variant. ${marker}`, traffic_percentage: 10 });
    put("variant_id", variant?.json.id, true);
  }
  if (publicId) {
    const published = await call("publication", "POST", `/v1/studio/${publicId}/publish`, { category: "education", tags: ["fixture"], pricing: "free" });
    put("marketplace", lastSegment(published?.json.marketplace_url));
    const share = await call("share", "POST", `/v1/social/share/${publicId}`, { platform: "link" });
    put("code", lastSegment(share?.json.share_url));
    // Embedded on a site, so that the embed's chat page answers and its guest operations get past
    // "not embeddable" (404) to the origin, token and body checks.
    const embedded = await call("embed settings", "PUT", `/v1/personas/${publicId}/embed`, { enabled: true, allowed_origins: [EMBED_ORIGIN] });
    if (embedded) put("embed", publicId);
  }
  const room = await call("room", "POST", "/v1/rooms", { name: `Room ${marker}`, description: marker, persona_ids: persona ? [persona.json.id] : [], is_public: false });
  put("rooms", room?.json.id, true);
  if (room) await call("room message", "POST", `/v1/rooms/${room.json.id}/messages`, { content: `hello ${marker}` });
  const image = await call("image", "POST", "/v1/images/generate", { prompt: `A lighthouse ${marker}` });
  put("name", lastSegment(image?.json.url));
  const key = await call("api key", "POST", "/v1/auth/api-keys", { name: `key ${marker}`, scopes: ["personas:read"] });
  put("api-keys", key?.json.id, true);
  const revoked = await call("revoked api key", "POST", "/v1/auth/api-keys", { name: "revoked", scopes: ["admin"] });
  if (revoked) await call("revoke", "DELETE", `/v1/auth/api-keys/${revoked.json.id}`);
  const revokedKey = typeof revoked?.json.key === "string" ? revoked.json.key : "pk_revoked";
  // A second login, so that refreshing (and a reused refresh token revoking its login) spares the first.
  const login = await call("second login", "POST", "/v1/auth/login", { email: user.email, password: user.password }, {});
  put("refresh_token", login?.json.refresh_token as string | undefined);

  if (webhook) {
    for (let i = 0; i < 30 && !values.delivery_id; i++) {
      const list = await call("deliveries", "GET", `/v1/webhooks/${webhook.json.id}/deliveries`);
      put("delivery_id", ((list?.json.data as Json[] | undefined) ?? [])[0]?.id, true);
      if (!values.delivery_id) await new Promise((wait) => setTimeout(wait, 100));
    }
    if (!values.delivery_id) skipped.push("webhook delivery: none within 3 s");
  }
  if (exported) {
    for (let i = 0; i < 30 && !values.export_id; i++) {
      for (const { text } of await outboxMails(service, { to: user.email })) {
        const link = /\/v1\/auth\/export-data\/([^/\s]+)\/download\?expires=(\d+)&signature=([0-9a-f]+)/.exec(text ?? "");
        if (link) {
          put("export_id", link[1], true);
          put("expires", link[2]);
          put("signature", link[3]);
        }
      }
      if (!values.export_id) await new Promise((wait) => setTimeout(wait, 100));
    }
    if (!values.export_id) skipped.push("data export link: no mail within 3 s");
  }

  return {
    user,
    values,
    marker,
    privateIds,
    revokedKey,
    unsignedJwt: jwtWith(claims, { alg: "none", typ: "JWT" }),
    foreignJwt: jwtWith(claims, { alg: "HS256", typ: "JWT" }, "not-the-server-secret"),
  };
}

/**
 * Two users with their fixtures; each is the other's "another user". With `strangers`, neither is
 * a member of the other's room (for the checks that the other user sees nothing).
 */
export async function buildWorld(service: TestService, receiverUrl: string, { strangers = false } = {}): Promise<World> {
  const skipped: string[] = [];
  const a = await makeActor(service, receiverUrl, skipped, "a");
  const b = await makeActor(service, receiverUrl, skipped, "b");
  // An OAuth client application (registered with the admin tools: the contract has no endpoint for it).
  const client = await registerOAuthClient(service.services, { name: "Fuzz app", redirectUris: ["https://app.example/callback"] });
  for (const actor of [a, b]) {
    actor.values.client_id = [client.client_id];
    actor.values.client_secret = [client.client_secret];
    actor.values.redirect_uri = ["https://app.example/callback"];
    actor.values.scope = ["personas:read", "personas:read conversations:read"];
    actor.values.code_challenge_method = ["S256"];
  }
  // Each user is a member of the other's room, so member operations have someone to act on.
  for (const [owner, member] of strangers
    ? []
    : ([
        [a, b],
        [b, a],
      ] as const)) {
    const room = owner.values.rooms?.[0];
    if (!room) continue;
    const response = await service.fetch(`/v1/rooms/${room}/members`, {
      method: "POST",
      headers: { ...owner.user.auth, "content-type": "application/json" },
      body: JSON.stringify({ user_id: member.user.id }),
    });
    if (response.status >= 300) skipped.push(`room member: ${response.status}`);
  }
  // The fixture `user_id` of an actor is the other user (whom one follows, adds or removes).
  [a.values.user_id, b.values.user_id] = [[b.user.id], [a.user.id]];
  return { a, b, skipped };
}

/**
 * Whether both users can still sign in; false once a fuzz batch deleted an account or its sessions,
 * and the world must be built again. (Fixtures that a DELETE batch removed stay removed: the DELETE
 * batches run last, children before parents, so each meets its fixture once.)
 */
export async function worldIntact(service: TestService, world: World): Promise<boolean> {
  for (const actor of [world.a, world.b]) {
    const response = await service.fetch("/v1/auth/me", { headers: actor.user.auth });
    await response.arrayBuffer();
    if (response.status !== 200) return false;
  }
  return true;
}

/**
 * The chat platforms' API addresses pointed at a loopback receiver: an integration connected with a
 * generated bot token must not send a request beyond the machine.
 */
export function loopbackPlatforms(receiverUrl: string): Record<string, string> {
  const base = new URL(receiverUrl).origin;
  return { DISCORD_API_URL: `${base}/discord`, TELEGRAM_API_URL: `${base}/telegram`, SLACK_API_URL: `${base}/slack/` };
}
