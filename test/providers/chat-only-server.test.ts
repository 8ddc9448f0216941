import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { processDocument } from "../../server/areas/knowledge/jobs.ts";
import { LocalEmbeddings } from "../../server/toolkit/providers/embeddings/local.ts";
import type { Services } from "../../server/toolkit/services.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { expectApiError, expectOk } from "../support/assertions.ts";
import { createConversation, createPersona } from "../support/chat.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { until } from "../support/wait.ts";
import { listen, tts } from "../voice/helpers.ts";
import { detail, insertPersona, settled, uploaded } from "../knowledge/helpers.ts";

// Issue 34, item 9, through the API: the README's `OPENAI_BASE_URL=<a local model server>
// CHAT_MODEL=llama3.1` sends chat there and nothing else, so a server that has only chat (the fake,
// configured chat-only: every other route answers 404 as Ollama's does) leaves speech, images,
// avatars and knowledge working offline. The old behaviour is a setting away for each capability,
// and then a failure names the settings to change, in the answer and in the log.
let chatOnly: FakeOpenAI;
let full: FakeOpenAI;

beforeAll(async () => {
  chatOnly = await startFakeOpenAI({ serves: ["chat"] });
  full = await startFakeOpenAI();
});
afterAll(async () => {
  await chatOnly?.close();
  await full?.close();
});

const others = (fake: FakeOpenAI) => fake.requests.filter((request) => request.path !== "/v1/chat/completions").map((request) => `${request.method} ${request.path}`);

function generate(service: TestService, user: TestUser, prompt: string) {
  return service.clientFor(user).POST("/v1/images/generate", { body: { prompt, style: "scene", aspect_ratio: "16:9" } });
}

describe("OPENAI_BASE_URL at a chat-only server, as the README shows", () => {
  let service: TestService;
  let alice: TestUser;

  beforeAll(async () => {
    service = await startTestService({ env: { OPENAI_BASE_URL: chatOnly.baseUrl, CHAT_MODEL: "llama3.1", LLM_MAX_RETRIES: "0", AUTO_AVATARS: "true" } });
    alice = await registerUser(service);
  });
  afterAll(async () => {
    await service?.close();
  });

  it("chats through that server, with its model", async () => {
    const persona = await createPersona(service, alice);
    expect(persona.model).toBe("llama3.1");
    const conversation = await createConversation(service, alice, persona.id);
    const sent = await expectOk(service.clientFor(alice).POST("/v1/conversations/{id}/messages", { params: { path: { id: conversation.id } }, body: { content: "Hello from a local model" } }), 201);
    expect(sent.assistant_message.content).toBe("Echo: Hello from a local model");
    const asked = chatOnly.requests.filter((request) => request.path === "/v1/chat/completions").map((request) => (request.body as { model: string }).model);
    expect(asked).toContain("llama3.1");
  });

  it("speaks, draws, gives avatars and indexes knowledge offline, asking that server for none of it", async () => {
    const spoken = await tts(service, alice.auth, { text: "Welcome aboard, cadet.", voice_id: "shimmer" });
    expect(spoken.status).toBe(200);
    expect((await listen(new Uint8Array(await spoken.arrayBuffer()))).seconds).toBeGreaterThan(0.5);

    const image = await expectOk(generate(service, alice, "A lighthouse at dusk"));
    expect([image.width, image.height]).toEqual([1024, 576]);

    const persona = await createPersona(service, alice, { name: "Keeper" });
    const avatar = await until("the automatic avatar", async () => (await expectOk(service.clientFor(alice).GET("/v1/personas/{id}", { params: { path: { id: persona.id } } }))).avatar_url);
    expect(avatar).toMatch(/\/v1\/images\/files\/[0-9a-f]{32}\.png$/);

    const document = await uploaded(service, alice, persona.id, "lights.txt", "Lighthouses guide ships along the coast at night.");
    expect((await settled(service, alice, persona.id, document.id)).status).toBe("ready");
    const found = await expectOk(service.clientFor(alice).POST("/v1/knowledge/{persona_id}/query", { params: { path: { persona_id: persona.id } }, body: { query: "What guides ships at night?" } }));
    expect(found.results[0]?.content).toContain("Lighthouses");

    expect(others(chatOnly)).toEqual([]);
  });
});

describe("each capability set to `openai` on that server (the old behaviour, reachable)", () => {
  let service: TestService;
  let alice: TestUser;
  let logText = "";

  beforeAll(async () => {
    const sink = new Writable({ write: (chunk, _encoding, done) => void ((logText += String(chunk)), done()) });
    service = await startTestService({
      env: {
        OPENAI_BASE_URL: chatOnly.baseUrl,
        OPENAI_API_KEY: "sk-secret-chat-key",
        CHAT_MODEL: "llama3.1",
        EMBEDDINGS_PROVIDER: "openai",
        SPEECH_PROVIDER: "openai",
        IMAGES_PROVIDER: "openai",
        LLM_MAX_RETRIES: "0",
        // No worker: the test runs the document's job itself, so that no retry races it.
        WORKER_ENABLED: "false",
      },
      log: pino({ level: "warn" }, sink),
    });
    alice = await registerUser(service);
  });
  afterAll(async () => {
    await service?.close();
  });

  /** The warnings the providers logged for `capability`. */
  const warnings = (capability: string) =>
    logText.split("\n").filter(Boolean).map((line) => JSON.parse(line) as { level: number; capability?: string; msg: string }).filter((line) => line.capability === capability);

  it("answers text to speech 502 naming the speech settings, and logs it", async () => {
    const error = await expectApiError(service.clientFor(alice).POST("/v1/voice/tts", { body: { text: "Hello", voice_id: "alloy" }, parseAs: "stream" }), 502, "upstream_error");
    expect(error.error.message).toMatch(/^The speech provider answered 404 \(unknown_url\)\. Speech is set by SPEECH_BASE_URL/);
    expect(error.error.message).toContain("SPEECH_PROVIDER=local");
    expect(warnings("speech").at(-1)).toMatchObject({ level: 40, msg: error.error.message });
  });

  it("answers image generation 502 naming the image settings, and logs it", async () => {
    const error = await expectApiError(generate(service, alice, "A lighthouse"), 502, "upstream_error");
    expect(error.error.message).toMatch(/^The image provider answered 404 \(unknown_url\)\. Images are set by IMAGES_BASE_URL/);
    expect(warnings("images").at(-1)).toMatchObject({ level: 40, msg: error.error.message });
  });

  it("fails a document on its last attempt and a knowledge query with 502, each naming the embeddings settings", async () => {
    await service.services.db.knex("users").where({ id: alice.id }).update({ plan: "creator" });
    const personaId = await insertPersona(service, alice);
    const failing = await uploaded(service, alice, personaId, "tides.txt", "The tide turns twice a day.");
    await expect(processDocument(service.services, failing.id, false)).rejects.toThrow(/EMBEDDINGS_BASE_URL/);
    expect(await processDocument(service.services, failing.id, true)).toBe("failed");
    const failed = await detail(service, alice, personaId, failing.id);
    expect(failed.error).toMatch(/^Processing failed: The embeddings provider answered 404 \(unknown_url\)\. Embeddings are set by EMBEDDINGS_BASE_URL/);
    expect(failed.error).toContain("EMBEDDINGS_PROVIDER=local");

    // A document indexed offline, then queried through the configured (failing) provider.
    const indexed = await uploaded(service, alice, personaId, "lights.txt", "Lighthouses guide ships along the coast at night.");
    const offline: Services = { ...service.services, providers: { ...service.services.providers, embeddings: new LocalEmbeddings() } };
    expect(await processDocument(offline, indexed.id, true)).toBe("ready");
    const error = await expectApiError(
      service.clientFor(alice).POST("/v1/knowledge/{persona_id}/query", { params: { path: { persona_id: personaId } }, body: { query: "What guides ships?" } }),
      502,
      "upstream_error",
    );
    expect(error.error.message).toMatch(/^The embeddings provider failed \(status 404\)\. Embeddings are set by EMBEDDINGS_BASE_URL/);
    expect(warnings("embeddings").length).toBeGreaterThanOrEqual(3);
  });

  it("still chats, and never writes the API key to the log", async () => {
    const persona = await createPersona(service, alice);
    const conversation = await createConversation(service, alice, persona.id);
    const sent = await expectOk(service.clientFor(alice).POST("/v1/conversations/{id}/messages", { params: { path: { id: conversation.id } }, body: { content: "Still there?" } }), 201);
    expect(sent.assistant_message.content).toBe("Echo: Still there?");
    expect(logText).not.toContain("sk-secret");
  });
});

describe("a capability on a server of its own", () => {
  let service: TestService;
  let alice: TestUser;

  beforeAll(async () => {
    service = await startTestService({
      env: {
        OPENAI_BASE_URL: chatOnly.baseUrl,
        OPENAI_API_KEY: "sk-chat-key",
        SPEECH_PROVIDER: "openai",
        SPEECH_BASE_URL: full.baseUrl,
        SPEECH_API_KEY: "sk-speech-key",
        IMAGES_PROVIDER: "openai",
        IMAGES_BASE_URL: full.baseUrl,
        LLM_MAX_RETRIES: "0",
      },
    });
    alice = await registerUser(service);
  });
  afterAll(async () => {
    await service?.close();
  });

  it("speaks there with its own key, and draws there without chat's key", async () => {
    full.reset();
    chatOnly.reset();
    const spoken = await tts(service, alice.auth, { text: "Hello there", voice_id: "nova" });
    expect(spoken.status).toBe(200);
    await spoken.arrayBuffer();
    await expectOk(generate(service, alice, "A harbour"));
    const speech = full.requests.find((request) => request.path === "/v1/audio/speech")!;
    const images = full.requests.find((request) => request.path === "/v1/images/generations")!;
    expect(speech.headers.authorization).toBe("Bearer sk-speech-key");
    // Chat's key belongs to chat's server; an images server of its own gets none unless IMAGES_API_KEY.
    expect(images.headers.authorization).not.toContain("sk-chat-key");
    expect(others(chatOnly).filter((request) => !request.startsWith("GET /files/"))).toEqual([]);
  });
});
