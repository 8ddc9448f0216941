import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type ChatStreamEvent, type PersonaClient } from "../../sdk/src/index.ts";
import { createConversation } from "../support/chat.ts";
import { useTwoProcesses } from "../support/generations.ts";
import { databaseKind } from "../support/service.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";

// Issue 21: the SDK's chat stream resumes by itself after a network drop (the socket is cut in a
// TCP proxy mid-stream) and can stop the generation it follows.
const ctx = useTwoProcesses();
let proxy: TcpProxy;
let client: PersonaClient;
beforeAll(async () => {
  proxy = await startTcpProxy(ctx.a.url);
  client = createClient({ baseUrl: proxy.url, accessToken: ctx.alice.accessToken, refreshToken: ctx.alice.refreshToken });
});
afterAll(async () => {
  await proxy?.close();
});

const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i} `);

describe(`the SDK chat stream (${databaseKind})`, () => {
  it("resumes after the socket is cut mid-stream, losing and repeating nothing", async () => {
    const conversation = await createConversation(ctx.a, ctx.alice, ctx.persona.id, "flaky network");
    ctx.fake.chat.next({ chunks: words(12), chunkDelayMs: 100 });
    const stream = client.conversations.stream(conversation.id, { content: "talk" });
    const deltas: string[] = [];
    let final: ChatStreamEvent | undefined;
    for await (const event of stream) {
      if (event.type === "delta") {
        deltas.push(event.content);
        if (deltas.length === 3) proxy.cut();
      } else final = event;
    }
    expect(stream.resumes).toBeGreaterThanOrEqual(1);
    expect(stream.generationId).toMatch(/^[0-9a-f-]{36}$/);
    expect(deltas.join("")).toBe(words(12).join(""));
    expect(final).toMatchObject({ type: "done", message_id: expect.any(String) });
    const generation = await client.conversations.getGeneration(conversation.id, stream.generationId!);
    expect(generation).toMatchObject({ status: "done", reply_message_id: stream.finalMessageId });
  });

  it("stop() ends the generation; the stream ends with done, stopped, and the partial reply is stored", async () => {
    const conversation = await createConversation(ctx.a, ctx.alice, ctx.persona.id, "stop from the SDK");
    ctx.fake.chat.next({ chunks: words(40), chunkDelayMs: 150 });
    const stream = client.conversations.stream(conversation.id, { content: "talk" });
    let text = "";
    for await (const event of stream) {
      if (event.type === "delta") {
        text += event.content;
        if (text.split(" ").length === 3) expect((await stream.stop()).status).toBe("stopped");
      }
    }
    expect(stream.final).toMatchObject({ stopped: true });
    const { messages } = await client.conversations.get(conversation.id);
    expect(messages.at(-1)).toMatchObject({ id: stream.finalMessageId, stopped: true, content: text });
  });

  it("resume() follows a generation from an event id", async () => {
    const conversation = await createConversation(ctx.a, ctx.alice, ctx.persona.id, "resume from the SDK");
    ctx.fake.chat.next({ chunks: ["A", "B", "C"] });
    const first = client.conversations.stream(conversation.id, { content: "abc" });
    expect(await first.text()).toBe("ABC");
    const again = client.conversations.resume(conversation.id, first.generationId!, { lastEventId: "2" });
    expect(await again.text()).toBe("BC");
    expect(again.finalMessageId).toBe(first.finalMessageId);
  });

  it("a regeneration and an edit, streamed, resume after a cut and stop like a send", async () => {
    const conversation = await createConversation(ctx.a, ctx.alice, ctx.persona.id, "tree streams from the SDK");
    ctx.fake.chat.next({ reply: "Venus." });
    const { user_message: question, assistant_message: first } = await client.conversations.send(conversation.id, { content: "Which planet?" });
    ctx.fake.chat.next({ chunks: words(10), chunkDelayMs: 100 });
    const regenerated = client.conversations.regenerateStream(conversation.id, first.id);
    let text = "";
    for await (const event of regenerated) {
      if (event.type !== "delta") continue;
      text += event.content;
      if (text.split(" ").length === 3) proxy.cut();
    }
    expect(regenerated.resumes).toBeGreaterThanOrEqual(1);
    expect(text).toBe(words(10).join(""));
    expect(await client.conversations.getGeneration(conversation.id, regenerated.generationId!)).toMatchObject({ status: "done", reply_message_id: regenerated.finalMessageId });

    ctx.fake.chat.next({ chunks: words(40), chunkDelayMs: 150 });
    const edited = client.conversations.editStream(conversation.id, question.id, { content: "And the red one?" });
    let partial = "";
    for await (const event of edited) {
      if (event.type !== "delta") continue;
      partial += event.content;
      if (partial.split(" ").length === 3) expect((await edited.stop()).status).toBe("stopped");
    }
    expect(edited.final).toMatchObject({ stopped: true });
    const { messages } = await client.conversations.get(conversation.id);
    expect(messages.map((m) => m.content)).toEqual(expect.arrayContaining(["And the red one?", partial]));
  });
});
