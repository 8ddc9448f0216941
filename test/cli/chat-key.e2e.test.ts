import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOk } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";
import { runCli } from "./run-cli.ts";

// `persona chat` with an API key of the `chat` scope, as a chat app or bot would hold (issue 34
// item 4, docs/adr/0292-a-chat-key-runs-a-whole-chat.md): it starts the conversation and streams the
// replies; a `read` key is refused with a message that names the scope to ask for.
let service: TestService;
let user: TestUser;

const envWith = (key: string) => ({ PERSONA_BASE_URL: service.url, PERSONA_API_KEY: key });
const lines = (stdout: string) => stdout.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);

beforeAll(async () => {
  service = await startTestService({ env: { AUTO_AVATARS: "false" } });
  user = await registerUser(service);
  await expectOk(service.clientFor(user).POST("/v1/personas", { body: { name: "Chatty Nova", instructions: "Be brief.", greeting_message: "Ahoy!" } }), 201);
});

afterAll(async () => {
  await service?.close();
});

describe("persona chat with a chat key", { timeout: 120_000 }, () => {
  it("starts a conversation with the persona named and streams each reply", async () => {
    const result = await runCli(["chat", "Chatty Nova", "--json"], { env: envWith(await apiKeyFor(service, user, ["chat"])), input: "Hello!\nAnd again?\n" });
    expect(result.code, result.stderr).toBe(0);
    const events = lines(result.stdout);
    const opened = events.find((event) => event.type === "conversation")!;
    expect(opened).toMatchObject({ new: true, conversation_id: expect.any(String) });
    expect(events.filter((event) => event.type === "done")).toHaveLength(2);
    expect(events.filter((event) => event.type === "error")).toEqual([]);

    // The exchange is stored in the user's conversation.
    const stored = await expectOk(service.clientFor(user).GET("/v1/conversations/{id}", { params: { path: { id: opened.conversation_id as string } } }));
    expect(stored.messages.filter((message) => message.role === "user").map((message) => message.content)).toEqual(["Hello!", "And again?"]);
  });

  it("with a read key, stops at once with the scope to ask for, and starts nothing", async () => {
    const before = (await expectOk(service.clientFor(user).GET("/v1/conversations", { params: { query: { limit: 100 } } }))).data.length;
    const result = await runCli(["chat", "Chatty Nova"], { env: envWith(await apiKeyFor(service, user, ["read"])), input: "Hello!\n" });
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('"conversations:write"');
    expect(result.stderr).toContain('"chat"');
    expect((await expectOk(service.clientFor(user).GET("/v1/conversations", { params: { query: { limit: 100 } } }))).data).toHaveLength(before);
  });
});
