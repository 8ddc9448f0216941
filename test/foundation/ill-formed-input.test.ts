import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError } from "../support/assertions.ts";
import { createConversation, createPersona } from "../support/chat.ts";
import { jsonHeaders, startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// Input that the contract's types allow but PostgreSQL or the parsers cannot take (issue 24, items
// 2, 3, 4, 6, 7, 8): each is a 400 in the envelope, refused before anything is written, on every
// operation, because the check sits in the shared validation path.
let service: TestService;
let user: TestUser;
let personaId: string;
let conversationId: string;

beforeAll(async () => {
  service = await startTestService();
  user = await registerUser(service);
  personaId = (await createPersona(service, user)).id;
  conversationId = (await createConversation(service, user, personaId)).id;
});

afterAll(async () => {
  await service?.close();
});

const NUL = "\u0000";
const send = (method: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  service.fetch(path, { method, headers: { ...jsonHeaders, ...user.auth, ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });

async function expectRefused(response: Response, path?: string) {
  const body = await expectError(response, 400, "invalid_request");
  if (path) expect(body.error.details.errors.map((e: { path: string }) => e.path)).toContain(path);
  return body;
}

describe("NUL characters", () => {
  it("are refused in every JSON text field, naming the field, and nothing is written", async () => {
    await expectRefused(await send("PUT", "/v1/auth/me", { display_name: `Ada${NUL}` }), "/body/display_name");
    await expectRefused(await send("PUT", "/v1/auth/me", { bio: `x${NUL}y` }), "/body/bio");
    await expectRefused(await send("POST", "/v1/auth/api-keys", { name: `k${NUL}`, scopes: ["personas:read"] }), "/body/name");
    await expectRefused(await send("POST", "/v1/api-keys", { name: `k${NUL}`, permissions: ["read"] }), "/body/name");
    const personas = await service.services.db.knex("personas").count<{ count: number }[]>({ count: "*" });
    await expectRefused(await send("POST", "/v1/personas", { name: "Nul", description: `d${NUL}`, instructions: "Be kind." }), "/body/description");
    expect(await service.services.db.knex("personas").count<{ count: number }[]>({ count: "*" })).toEqual(personas);
    await expectRefused(await send("PUT", `/v1/personas/${personaId}`, { instructions: `${NUL}` }), "/body/instructions");
    await expectRefused(await send("POST", "/v1/conversations", { persona_id: personaId, title: `t${NUL}` }), "/body/title");
    await expectRefused(await send("POST", `/v1/conversations/${conversationId}/messages`, { content: `hi${NUL}` }), "/body/content");
    const me = await (await service.fetch("/v1/auth/me", { headers: user.auth })).json();
    expect(me.display_name ?? "").not.toContain(NUL);
  });

  it("are refused in a streamed send before any stream starts", async () => {
    const response = await send("POST", `/v1/conversations/${conversationId}/messages/stream`, { content: `hi${NUL}` });
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    await expectRefused(response, "/body/content");
    const messages = await service.services.db.knex("messages").where({ conversation_id: conversationId, role: "user" });
    expect(messages).toEqual([]);
  });

  it("are refused in query and path parameters", async () => {
    await expectRefused(await service.fetch("/v1/personas/explore?q=%00", { headers: user.auth }), "/query/q");
    await expectRefused(await service.fetch("/v1/conversations/search?q=a%00b", { headers: user.auth }), "/query/q");
    await expectRefused(await service.fetch("/v1/oauth/authorize?response_type=code&client_id=%00&redirect_uri=https%3A%2F%2Fa.example%2Fcb&scope=personas%3Aread&state=s"), "/query/client_id");
    await expectRefused(await service.fetch(`/v1/conversations/a%00b`, { headers: user.auth }));
  });

  it("are refused in form bodies", async () => {
    const response = await service.fetch("/v1/oauth/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=refresh_token&client_id=a%00&client_secret=b&refresh_token=c",
    });
    await expectRefused(response, "/body/client_id");
  });

  it("are refused in object keys too", async () => {
    await expectRefused(await send("PUT", "/v1/auth/me", `{"display_name":"Ada","x${NUL}":1}`));
  });
});

describe("ill-formed Unicode", () => {
  it("refuses a lone surrogate escape in JSON, on message sends and everywhere else", async () => {
    await expectRefused(await send("POST", `/v1/conversations/${conversationId}/messages`, '{"content":"\\ud800"}'), "/body/content");
    await expectRefused(await send("POST", `/v1/conversations/${conversationId}/messages/stream`, '{"content":"a\\udc00b"}'), "/body/content");
    await expectRefused(await send("PUT", "/v1/auth/me", '{"display_name":"\\ud83d"}'), "/body/display_name");
    const me = await (await service.fetch("/v1/auth/me", { headers: user.auth })).json();
    expect(me.display_name ?? "").not.toContain("\ufffd");
    // A well-formed pair is an emoji, and is kept.
    const ok = await send("PUT", "/v1/auth/me", '{"display_name":"Ada \\ud83d\\ude00"}');
    expect(ok.status).toBe(200);
    expect((await ok.json()).display_name).toBe("Ada 😀");
  });

  it("refuses bytes that are not UTF-8 in a JSON body, rather than storing U+FFFD", async () => {
    const body = Buffer.concat([Buffer.from('{"display_name":"A'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]);
    const response = await service.fetch("/v1/auth/me", { method: "PUT", headers: { ...jsonHeaders, ...user.auth }, body: new Uint8Array(body) });
    await expectRefused(response);
  });

  it("refuses percent-encoded bytes that are not UTF-8 in the URL", async () => {
    await expectRefused(await service.fetch("/v1/personas/explore?q=%ED%A0%80", { headers: user.auth }), "/query/q");
    await expectRefused(await service.fetch("/v1/personas/explore?q=%FF", { headers: user.auth }), "/query/q");
  });
});

describe("malformed multipart uploads", () => {
  const upload = (body: string, boundary = "XyZ") =>
    service.fetch(`/v1/knowledge/${personaId}/documents`, {
      method: "POST",
      headers: { ...user.auth, "content-type": `multipart/form-data; boundary=${boundary}` },
      body,
    });
  const part = (headers: string, content: string) => `--XyZ\r\n${headers}\r\n\r\n${content}\r\n`;

  it("answers 400 for a malformed part header", async () => {
    await expectRefused(await upload(`--XyZ\r\nContent-Disposition form-data; name="file"\r\n\r\nhello\r\n--XyZ--\r\n`));
  });

  it("answers 400 for a body cut off mid-part", async () => {
    await expectRefused(await upload(`--XyZ\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello wor`));
  });

  it("answers 400 for a NUL in the file name", async () => {
    const body = part(`Content-Disposition: form-data; name="file"; filename="a${NUL}b.txt"\r\nContent-Type: text/plain`, "hello") + "--XyZ--\r\n";
    await expectRefused(await upload(body));
    expect(await service.services.db.knex("knowledge_documents").where({ persona_id: personaId })).toEqual([]);
  });

  it("still accepts a well-formed upload", async () => {
    const body = part(`Content-Disposition: form-data; name="file"; filename="notes.txt"\r\nContent-Type: text/plain`, "hello world") + "--XyZ--\r\n";
    const response = await upload(body);
    expect(response.status, await response.clone().text()).toBe(202);
  });
});

describe("empty bodies on operations that require one", () => {
  for (const [label, path] of [["PUT /v1/auth/me", "/v1/auth/me"], ["PUT /v1/personas/{id}", "persona"]] as const) {
    it(`${label}: an empty JSON body is 400, saying the body is required`, async () => {
      const url = path === "persona" ? `/v1/personas/${personaId}` : path;
      const empty = await service.fetch(url, { method: "PUT", headers: { ...jsonHeaders, ...user.auth }, body: "" });
      const body = await expectRefused(empty, "/body");
      expect(body.error.message).toMatch(/body is required/i);
      const none = await service.fetch(url, { method: "PUT", headers: user.auth });
      expect((await expectRefused(none, "/body")).error.message).toMatch(/body is required/i);
    });
  }
});

describe("Idempotency-Key", () => {
  it("refuses an empty key with a 400 naming the header", async () => {
    const response = await send("POST", "/v1/conversations", { persona_id: personaId }, { "Idempotency-Key": "" });
    const body = await expectRefused(response);
    expect(JSON.stringify(body.error)).toMatch(/idempotency-key/i);
  });
});

describe("an oversized request line", () => {
  it("answers 431 in the error envelope, not a bare status", async () => {
    const { port } = new URL(service.url);
    const { status, text, type } = await new Promise<{ status: number; text: string; type: string | undefined }>((resolve, reject) => {
      const req = httpRequest({ host: "127.0.0.1", port, path: `/v1/personas/explore?q=${"a".repeat(20_000)}`, headers: user.auth }, (res) => {
        let data = "";
        res.on("data", (chunk: Buffer) => (data += chunk.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: data, type: res.headers["content-type"] }));
      });
      req.on("error", reject);
      req.end();
    });
    expect(status).toBe(431);
    expect(type).toMatch(/^application\/json/);
    const body = JSON.parse(text);
    expect(body.error.code).toBe("invalid_request");
    expect(body.error.message).toMatch(/16 KB|too large/i);
  });
});
