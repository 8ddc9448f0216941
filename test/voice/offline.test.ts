import { beforeAll, describe, expect, it } from "vitest";
import { expectError } from "../support/assertions.ts";
import { useTestService } from "../support/fixtures.ts";
import type { TestService } from "../support/service.ts";
import { apiKeyFor, type TestUser } from "../support/users.ts";
import { listen, stt, toneWav, tts } from "./helpers.ts";

// The offline default: Flite voices MP3-encoded in-process, and no speech-to-text (503).
let service: TestService;
let alice: TestUser;

const fixture = useTestService();
beforeAll(() => void ({ service, alice } = fixture));

const SENTENCE = "Welcome aboard, cadet! Tonight Venus is the bright lantern low in the west.";

describe("text to speech, offline", () => {
  it("speaks the text as a streamed MP3 that decodes to a few seconds of audible speech, under the voice limit", async () => {
    const response = await tts(service, alice.auth, { text: SENTENCE, voice_id: "nova" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("audio/mpeg");
    // Streamed as it is synthesised: no length known up front.
    expect(response.headers.get("transfer-encoding")).toBe("chunked");
    expect(response.headers.get("x-ratelimit-limit")).toBe("100");
    expect(Number(response.headers.get("x-ratelimit-remaining"))).toBeLessThan(100);
    const mp3 = new Uint8Array(await response.arrayBuffer());
    const heard = await listen(mp3);
    expect(heard.errors).toBe(0);
    // About 75 characters: a few seconds at a speaking pace, not a blip and not a minute.
    expect(heard.seconds).toBeGreaterThan(2.5);
    expect(heard.seconds).toBeLessThan(12);
    expect(heard.rms).toBeGreaterThan(0.02);
  });

  it("gives each of the six voices a sound of its own, alloy by default", async () => {
    const clips = new Map<string, string>();
    for (const voice of ["alloy", "echo", "fable", "onyx", "nova", "shimmer"]) {
      const response = await tts(service, alice.auth, { text: "Hello there, cadet.", voice_id: voice });
      expect(response.status).toBe(200);
      const mp3 = Buffer.from(await response.arrayBuffer());
      expect((await listen(mp3)).rms).toBeGreaterThan(0.01);
      clips.set(voice, mp3.toString("base64"));
    }
    expect(new Set(clips.values()).size).toBe(6);
    const byDefault = await tts(service, alice.auth, { text: "Hello there, cadet." });
    expect(Buffer.from(await byDefault.arrayBuffer()).toString("base64")).toBe(clips.get("alloy"));
  });

  it("answers a valid MP3 even for text with nothing to pronounce", async () => {
    const response = await tts(service, alice.auth, { text: "…!?" });
    expect(response.status).toBe(200);
    const heard = await listen(new Uint8Array(await response.arrayBuffer()));
    expect(heard.errors).toBe(0);
    expect(heard.seconds).toBeGreaterThan(0);
  });

  it.each([
    ["empty text", { text: "" }, "/body/text"],
    ["5,001 characters", { text: "a".repeat(5001) }, "/body/text"],
    ["an unknown voice", { text: "Hello", voice_id: "robot" }, "/body/voice_id"],
    ["no text", { voice_id: "nova" }, "/body/text"],
  ])("refuses %s with 400 naming the field", async (_what, body, path) => {
    const error = await expectError(await tts(service, alice.auth, body), 400, "invalid_request");
    expect(error.error.details.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  it("needs a credential, and a key with the voice scope", async () => {
    await expectError(await tts(service, {}, { text: "Hello" }), 401, "unauthorized");
    const readOnly = await apiKeyFor(service, alice, ["personas:read"]);
    await expectError(await tts(service, { "x-api-key": readOnly }, { text: "Hello" }), 403, "forbidden");
    const voiceKey = await apiKeyFor(service, alice, ["voice"]);
    expect((await tts(service, { "x-api-key": voiceKey }, { text: "Hello" })).status).toBe(200);
  });
});

describe("speech to text, offline", () => {
  it("answers 503 provider_unavailable saying how to configure a provider", async () => {
    const error = await expectError(await stt(service, alice, "hello.wav", toneWav()), 503, "provider_unavailable");
    expect(error.error.message).toContain("SPEECH_PROVIDER=openai");
  });

  it("still checks the upload first: a renamed text file is 415, an unknown extension is 415", async () => {
    const text = new TextEncoder().encode("This is not audio at all, just a text file renamed.\n");
    const renamed = await expectError(await stt(service, alice, "notes.mp3", text), 415, "unsupported_media_type");
    expect(renamed.error.message).toContain("named .mp3");
    await expectError(await stt(service, alice, "notes.txt", text), 415, "unsupported_media_type");
    // A real WAV named .mp3 is not what it says either.
    await expectError(await stt(service, alice, "tone.mp3", toneWav()), 415, "unsupported_media_type");
  });

  it("refuses 25 MB + 1 byte with 413, and a form without the audio field with 400", async () => {
    const big = new Uint8Array(25 * 1024 * 1024 + 1);
    big.set(toneWav(0.1));
    await expectError(await stt(service, alice, "long.wav", big), 413, "payload_too_large");
    await expectError(await stt(service, alice, "hello.wav", toneWav(), "file"), 400, "invalid_request");
  });

  it("needs a credential", async () => {
    await expectError(await stt(service, {}, "hello.wav", toneWav()), 401, "unauthorized");
  });
});
