import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../server/toolkit/config.ts";
import { UpstreamError } from "../../server/toolkit/providers/errors.ts";
import { OpenAIImages } from "../../server/toolkit/providers/images/openai.ts";
import { OpenAIChatModel } from "../../server/toolkit/providers/llm/openai.ts";
import { OpenAISpeech } from "../../server/toolkit/providers/speech/openai.ts";
import { OpenAIEmbeddings } from "../../server/toolkit/providers/embeddings/openai.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";

// One setting moves one capability (issue 34, item 9): OPENAI_BASE_URL and OPENAI_API_KEY choose chat;
// embeddings, speech and images stay offline unless their own *_PROVIDER says `openai`, and then
// reach their own *_BASE_URL or else chat's server, with chat's key only on chat's server. A failure
// of any of them names the settings that choose it, in its message and in a warning of the log.
const LOCAL_SERVER = "http://127.0.0.1:11434/v1";

describe("which settings choose each capability's provider", () => {
  it("sends only chat to OPENAI_BASE_URL: the README's local model server leaves the rest offline", () => {
    const config = loadConfig({ OPENAI_BASE_URL: LOCAL_SERVER, CHAT_MODEL: "llama3.1" });
    expect(config.llm).toMatchObject({ provider: "openai", baseUrl: LOCAL_SERVER, model: "llama3.1" });
    expect(config.embeddings).toMatchObject({ provider: "local", model: "local-hashed-lexical-v1" });
    expect(config.speech.provider).toBe("local");
    expect(config.images.provider).toBe("local");
  });

  it("leaves them offline with an OpenAI key alone too, and with no setting at all", () => {
    for (const env of [{ OPENAI_API_KEY: "sk-chat" }, {}]) {
      const config = loadConfig(env);
      expect([config.embeddings.provider, config.speech.provider, config.images.provider]).toEqual(["local", "local", "local"]);
    }
    expect(loadConfig({ OPENAI_API_KEY: "sk-chat" }).llm.provider).toBe("openai");
    expect(loadConfig({}).llm.provider).toBe("local");
  });

  it("keeps the old behaviour a setting away: `openai` reaches chat's server with chat's key", () => {
    const config = loadConfig({ OPENAI_BASE_URL: LOCAL_SERVER, OPENAI_API_KEY: "sk-chat", EMBEDDINGS_PROVIDER: "openai", SPEECH_PROVIDER: "openai", IMAGES_PROVIDER: "openai" });
    for (const capability of [config.embeddings, config.speech, config.images]) {
      expect(capability).toMatchObject({ provider: "openai", baseUrl: LOCAL_SERVER, apiKey: "sk-chat" });
    }
    expect(config.embeddings.model).toBe("text-embedding-3-small");
    // No base URL anywhere: api.openai.com for both, so the key is shared.
    const openai = loadConfig({ OPENAI_API_KEY: "sk-chat", IMAGES_PROVIDER: "openai" });
    expect(openai.images).toMatchObject({ provider: "openai", baseUrl: undefined, apiKey: "sk-chat" });
  });

  it("sends a capability with a base URL of its own there, with its own key, and never chat's key to another server", () => {
    const elsewhere = loadConfig({ OPENAI_BASE_URL: LOCAL_SERVER, OPENAI_API_KEY: "sk-chat", SPEECH_PROVIDER: "openai", SPEECH_BASE_URL: "https://api.openai.com/v1" });
    expect(elsewhere.speech).toMatchObject({ provider: "openai", baseUrl: "https://api.openai.com/v1", apiKey: undefined });
    const ownKey = loadConfig({ OPENAI_BASE_URL: LOCAL_SERVER, SPEECH_PROVIDER: "openai", SPEECH_BASE_URL: "https://api.openai.com/v1", SPEECH_API_KEY: "sk-speech" });
    expect(ownKey.speech).toMatchObject({ baseUrl: "https://api.openai.com/v1", apiKey: "sk-speech" });
    // The same server written with a trailing slash is the same server.
    const same = loadConfig({ OPENAI_BASE_URL: LOCAL_SERVER, OPENAI_API_KEY: "sk-chat", EMBEDDINGS_PROVIDER: "openai", EMBEDDINGS_BASE_URL: `${LOCAL_SERVER}/` });
    expect(same.embeddings).toMatchObject({ baseUrl: `${LOCAL_SERVER}/`, apiKey: "sk-chat" });
    // Chat on api.openai.com, images on a server of their own: chat's key stays with chat.
    const images = loadConfig({ OPENAI_API_KEY: "sk-chat", IMAGES_PROVIDER: "openai", IMAGES_BASE_URL: "http://127.0.0.1:7860/v1" });
    expect(images.images).toMatchObject({ baseUrl: "http://127.0.0.1:7860/v1", apiKey: undefined });
  });

  it("refuses a base URL that is not a URL, naming the setting", () => {
    for (const name of ["EMBEDDINGS_BASE_URL", "SPEECH_BASE_URL", "IMAGES_BASE_URL"]) {
      expect(() => loadConfig({ [name]: "not a url" })).toThrow(ConfigError);
      expect(() => loadConfig({ [name]: "not a url" })).toThrow(name);
    }
    expect(() => loadConfig({ SPEECH_PROVIDER: "whisper" })).toThrow("SPEECH_PROVIDER");
  });
});

describe("a capability the server lacks", () => {
  let chatOnly: FakeOpenAI;
  let logText = "";
  const log = pino({ level: "warn" }, new Writable({ write: (chunk, _encoding, done) => void ((logText += String(chunk)), done()) }));

  beforeAll(async () => {
    chatOnly = await startFakeOpenAI({ serves: ["chat"] });
  });
  afterAll(async () => {
    await chatOnly?.close();
  });

  /** The settings of every capability set to `openai` on the chat-only server, with a key. */
  const config = () =>
    loadConfig({ OPENAI_BASE_URL: chatOnly.baseUrl, OPENAI_API_KEY: "sk-secret-chat-key", CHAT_MODEL: "llama3.1", EMBEDDINGS_PROVIDER: "openai", SPEECH_PROVIDER: "openai", IMAGES_PROVIDER: "openai", LLM_MAX_RETRIES: "0" });

  const failures = [
    ["speech", "SPEECH_BASE_URL", "SPEECH_PROVIDER=local", async () => {
      for await (const _ of new OpenAISpeech(config().speech, config().llm, log).synthesize({ text: "Hello", voice: "alloy" })) void _;
    }],
    ["speech to text", "SPEECH_BASE_URL", "SPEECH_PROVIDER=local", () => new OpenAISpeech(config().speech, config().llm, log).transcribe({ bytes: new Uint8Array(64), filename: "a.wav", mimeType: "audio/wav" })],
    ["images", "IMAGES_BASE_URL", "IMAGES_PROVIDER=local", () => new OpenAIImages(config().images, config().llm, log).generate({ prompt: "A lighthouse", style: "avatar", aspectRatio: "1:1" })],
    ["embeddings", "EMBEDDINGS_BASE_URL", "EMBEDDINGS_PROVIDER=local", () => new OpenAIEmbeddings(config().embeddings, config().llm, log).embed(["hello"])],
  ] as const;

  it.each(failures)("%s: the error names the settings to change, and so does the log", async (_capability, setting, offline, call) => {
    logText = "";
    const error = await (call as () => Promise<unknown>)().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).status).toBe(404);
    expect((error as Error).message).toMatch(/answered 404 \(unknown_url\)\. /);
    expect((error as Error).message).toContain(setting);
    expect((error as Error).message).toContain(offline);
    const line = JSON.parse(logText.trim().split("\n").at(-1)!) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 40, provider: "openai", server: new URL(chatOnly.baseUrl).origin, status: 404 });
    expect(line.msg).toBe((error as Error).message);
    expect(logText).not.toContain("sk-secret");
  });

  it("chat on the same server works; a chat failure names chat's settings", async () => {
    const model = new OpenAIChatModel(config().llm, log);
    const reply = await model.complete({ model: "llama3.1", messages: [{ role: "user", content: "Hi" }], maxOutputTokens: 16 });
    expect(reply.content).toBe("Echo: Hi");
    chatOnly.chat.next({ status: 404, errorBody: { error: { message: "model 'llama9' not found", type: "api_error", code: "model_not_found" } } });
    logText = "";
    const error = await model.complete({ model: "llama9", messages: [{ role: "user", content: "Hi" }], maxOutputTokens: 16 }).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/^The model provider answered 404 \(model_not_found\)\. Chat is set by OPENAI_BASE_URL/);
    expect((error as Error).message).not.toContain("llama9");
    expect(JSON.parse(logText.trim())).toMatchObject({ capability: "chat", status: 404 });
  });
});
