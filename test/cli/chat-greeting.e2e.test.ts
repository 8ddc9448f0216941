import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOk } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";
import { runCli } from "./run-cli.ts";

// `persona chat` opens with the conversation's stored greeting (issue 34 item 1), shown once: for
// a new conversation, for one continued before anything was said, and among the history of one
// with an exchange; with --json as one `greeting` event naming the stored message.
let service: TestService;
let user: TestUser;
let env: Record<string, string>;
let personaId: string;

const GREETING = "Clear skies, {{user}}! {{char}} here.";
const lines = (stdout: string) => stdout.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
const count = (text: string, part: string) => text.split(part).length - 1;

beforeAll(async () => {
  service = await startTestService({ env: { AUTO_AVATARS: "false" } });
  user = await registerUser(service);
  env = { PERSONA_BASE_URL: service.url, PERSONA_API_KEY: await apiKeyFor(service, user, ["admin"]) };
  personaId = (await expectOk(service.clientFor(user).POST("/v1/personas", { body: { name: "Orion", instructions: "You are Orion.", greeting_message: GREETING } }), 201)).id;
});

afterAll(async () => {
  await service?.close();
});

describe("persona chat's greeting", { timeout: 120_000 }, () => {
  const shown = () => `Orion> Clear skies, ${user.username}! Orion here.`;

  it("opens a new conversation with its stored greeting, once, its macros filled", async () => {
    const result = await runCli(["chat", personaId], { env, input: "Hello!\n" });
    expect(result.code, result.stderr).toBe(0);
    expect(count(result.stdout, shown())).toBe(1);
    expect(result.stdout.indexOf(shown())).toBeLessThan(result.stdout.indexOf("you> Hello!"));
  });

  it("with --json, sends one greeting event naming the stored message", async () => {
    const result = await runCli(["chat", personaId, "--json"], { env, input: "Hello!\n" });
    expect(result.code, result.stderr).toBe(0);
    const events = lines(result.stdout);
    const opened = events.find((event) => event.type === "conversation")!;
    const greetings = events.filter((event) => event.type === "greeting");
    expect(greetings).toHaveLength(1);
    const stored = await expectOk(service.clientFor(user).GET("/v1/conversations/{id}", { params: { path: { id: opened.conversation_id as string } } }));
    expect(greetings[0]).toEqual({ type: "greeting", content: stored.messages[0]!.content, message_id: stored.messages[0]!.id });
    expect(stored.messages[0]).toMatchObject({ greeting: true, content: `Clear skies, ${user.username}! Orion here.` });
    expect(events.indexOf(greetings[0]!)).toBeLessThan(events.findIndex((event) => event.type === "delta"));
  });

  it("shows it once when a conversation is continued, before anything was said or with its history", async () => {
    const fresh = await expectOk(service.clientFor(user).POST("/v1/conversations", { body: { persona_id: personaId } }), 201);
    const first = await runCli(["chat", fresh.id], { env, input: "" });
    expect(first.code, first.stderr).toBe(0);
    expect(count(first.stdout, shown())).toBe(1);

    const talked = await runCli(["chat", fresh.id], { env, input: "Which star is that?\n" });
    expect(talked.code, talked.stderr).toBe(0);
    const again = await runCli(["chat", fresh.id], { env, input: "" });
    expect(again.code, again.stderr).toBe(0);
    // The history: the greeting, the question, the reply, each once.
    expect(count(again.stdout, shown())).toBe(1);
    expect(count(again.stdout, "you> Which star is that?")).toBe(1);
    expect(again.stdout.indexOf(shown())).toBeLessThan(again.stdout.indexOf("you> Which star is that?"));
  });
});
