// The SDK against the real service: typed errors, the shared token refresh, page iteration, and
// (where those areas are live) register → persona → streamed chat.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  createClient,
  NotFoundError,
  PersonaError,
  type Tokens,
} from "../../sdk/src/index.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service?.close();
});

/** A fetch that counts the calls per path, to see how many refreshes really went out. */
function countingFetch() {
  const calls: string[] = [];
  const fetch = (request: Request) => {
    calls.push(`${request.method} ${new URL(request.url).pathname}`);
    return globalThis.fetch(request);
  };
  return { fetch, count: (call: string) => calls.filter((c) => c === call).length };
}

describe("typed errors", () => {
  test("error answers become PersonaError subclasses with code, details and the request id", async () => {
    const anonymous = createClient({ baseUrl: service.url });
    const invalid = await anonymous.auth.register({ email: "not-an-email", username: "x", password: "short" }).catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(BadRequestError);
    expect(invalid).toBeInstanceOf(PersonaError);
    const bad = invalid as BadRequestError;
    expect(bad.status).toBe(400);
    expect(bad.code).toBe("invalid_request");
    expect(bad.details?.errors?.length).toBeGreaterThan(0);
    expect(bad.requestId).toMatch(/^[\w.:-]+$/);
    expect(bad.name).toBe("BadRequestError");

    const user = await registerUser(service);
    const wrong = await anonymous.auth.login({ email: user.email, password: "Wrong-password-1" }).catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(AuthenticationError);
    expect((wrong as PersonaError).code).toBe("unauthorized");

    const taken = await anonymous.auth.register({ email: user.email, username: `${user.username}x`, password: user.password }).catch((e: unknown) => e);
    expect(taken).toBeInstanceOf(ConflictError);

    const client = createClient({ baseUrl: service.url, accessToken: user.accessToken, refreshToken: user.refreshToken });
    const missing = await client.auth.apiKeys.revoke("0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01").catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect((missing as NotFoundError).headers?.get("x-ratelimit-limit")).toBeTruthy();
  });

  test("an API key authenticates; a revoked one is an AuthenticationError", async () => {
    const user = await registerUser(service);
    const session = createClient({ baseUrl: service.url, accessToken: user.accessToken, refreshToken: user.refreshToken });
    const created = await session.auth.apiKeys.create({ name: "sdk", scopes: ["admin"] });
    const withKey = createClient({ baseUrl: service.url, apiKey: created.key });
    expect((await withKey.auth.me()).id).toBe(user.id);
    await session.auth.apiKeys.revoke(created.id);
    await expect(withKey.auth.me()).rejects.toBeInstanceOf(AuthenticationError);
  });
});

describe("token refresh", () => {
  test("concurrent 401s share one refresh, every call then succeeds, and onTokens gets the new pair", async () => {
    const user = await registerUser(service);
    const { fetch, count } = countingFetch();
    const saved: Tokens[] = [];
    const client = createClient(
      { baseUrl: service.url, accessToken: "expired.or.bogus", refreshToken: user.refreshToken, onTokens: (tokens) => void saved.push(tokens) },
      { fetch },
    );
    const results = await Promise.all(Array.from({ length: 8 }, () => client.auth.me()));
    expect(results.every((me) => me.id === user.id)).toBe(true);
    expect(count("POST /v1/auth/refresh")).toBe(1);
    expect(saved).toHaveLength(1);
    expect(client.tokens).toEqual({ accessToken: saved[0]!.accessToken, refreshToken: saved[0]!.refreshToken });
    expect(saved[0]!.expiresIn).toBeGreaterThan(0);

    // Had the refresh token been presented twice, the service would have revoked the whole login;
    // the new pair still working proves it was presented once.
    expect((await client.auth.me()).id).toBe(user.id);
    const again = createClient({ baseUrl: service.url, accessToken: "bogus", refreshToken: saved[0]!.refreshToken });
    expect((await again.auth.me()).id).toBe(user.id);
  });

  test("a refused refresh surfaces the original 401 once, without retrying the refresh", async () => {
    const { fetch, count } = countingFetch();
    const client = createClient({ baseUrl: service.url, accessToken: "bogus", refreshToken: "not-a-refresh-token" }, { fetch });
    await expect(client.auth.me()).rejects.toBeInstanceOf(AuthenticationError);
    await expect(client.auth.me()).rejects.toBeInstanceOf(AuthenticationError);
    expect(count("POST /v1/auth/refresh")).toBe(1);
    expect(count("GET /v1/auth/me")).toBe(2);
  });

  test("a wrong password does not trigger a refresh", async () => {
    const user = await registerUser(service);
    const { fetch, count } = countingFetch();
    const client = createClient({ baseUrl: service.url, accessToken: user.accessToken, refreshToken: user.refreshToken }, { fetch });
    await expect(client.auth.login({ email: user.email, password: "Wrong-password-1" })).rejects.toBeInstanceOf(AuthenticationError);
    expect(count("POST /v1/auth/refresh")).toBe(0);
  });
});

describe("pages", () => {
  test("API keys iterate with for await, await gives the first page, paginate() covers the same list", async () => {
    const user = await registerUser(service);
    const client = createClient({ baseUrl: service.url, accessToken: user.accessToken, refreshToken: user.refreshToken });
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await client.auth.apiKeys.create({ name: `key ${i}`, scopes: ["personas:read"] })).id);
    const seen = [];
    for await (const key of client.auth.apiKeys.list()) seen.push(key.id);
    expect(seen.sort()).toEqual([...ids].sort());
    const first = await client.auth.apiKeys.list();
    expect(first.data).toHaveLength(3);
    expect((await client.paginate("/v1/auth/api-keys").toArray()).map((key) => key.key_hint)).toHaveLength(3);
  });
});

// Personas, conversations and knowledge are built by other parts of the team; their tests run once they are.

describe("chat end to end", () => {
  test("register → persona → conversation → streamed reply, then the blocking send and the pages", async () => {
    const anonymous = createClient({ baseUrl: service.url });
    const suffix = Math.random().toString(36).slice(2, 8);
    const session = await anonymous.auth.register({ email: `sdk_${suffix}@example.com`, username: `sdk_${suffix}`, password: "Correct-horse-9" });
    const client = createClient({ baseUrl: service.url, accessToken: session.access_token, refreshToken: session.refresh_token });

    const persona = await client.personas.create({ name: "Captain Nova", instructions: "You are Captain Nova. Answer briefly." });
    expect((await client.personas.get(persona.id)).name).toBe("Captain Nova");
    const conversation = await client.conversations.create({ persona_id: persona.id });

    const stream = client.conversations.stream(conversation.id, { content: "Hello, captain!" });
    const events = [];
    for await (const event of stream) events.push(event);
    expect(events.at(-1)?.type).toBe("done");
    expect(events.filter((e) => e.type === "delta").length).toBeGreaterThan(0);
    expect(stream.finalMessageId).toBeTruthy();
    // The whole done event: citations and usage too (issue 13, item 10).
    expect(stream.final).toMatchObject({ message_id: stream.finalMessageId, citations: [], usage: { output_tokens: expect.any(Number) } });

    const reply = await client.conversations.send(conversation.id, { content: "And again?" });
    expect(reply.assistant_message.content.length).toBeGreaterThan(0);

    // Newest first, down to the greeting the conversation opened with (generated: the persona had none).
    const messages = await client.conversations.messages.list(conversation.id, { limit: 1 }).toArray();
    expect(messages).toHaveLength(5);
    expect(messages.map((m) => m.role)).toEqual(["assistant", "user", "assistant", "user", "assistant"]);
    expect(messages[3]!.content).toBe("Hello, captain!");
    expect(messages[4]).toMatchObject({ greeting: true, content: "Hello, I am Captain Nova, what shall we talk about today?" });

    const personas = await client.personas.list().toArray();
    expect(personas.map((p) => p.id)).toContain(persona.id);
    await expect(client.conversations.stream("0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01", { content: "hi" }).text()).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe("knowledge end to end", () => {
  test("upload from bytes, then get, list and delete", async () => {
    const user = await registerUser(service);
    const client = createClient({ baseUrl: service.url, accessToken: user.accessToken, refreshToken: user.refreshToken });
    const persona = await client.personas.create({ name: "Librarian", instructions: "Answer from the notes." });
    const uploaded = await client.knowledge.upload(persona.id, new TextEncoder().encode("# Notes\n\nThe launch window opens at dawn."), { filename: "notes.md" });
    expect(uploaded.filename).toBe("notes.md");
    expect((await client.knowledge.get(persona.id, uploaded.id)).id).toBe(uploaded.id);
    expect((await client.knowledge.list(persona.id).toArray()).map((doc) => doc.id)).toEqual([uploaded.id]);
    await client.knowledge.delete(persona.id, uploaded.id);
    await expect(client.knowledge.get(persona.id, uploaded.id)).rejects.toBeInstanceOf(NotFoundError);
  });
});
