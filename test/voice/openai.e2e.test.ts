import { beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../sdk/src/index.ts";
import { fakeMp3, type FakeOpenAI } from "../fakes/openai-server.ts";
import { expectError } from "../support/assertions.ts";
import { useServiceWithFakeOpenAI } from "../support/fixtures.ts";
import type { TestService } from "../support/service.ts";
import { apiKeyFor, type TestUser } from "../support/users.ts";
import { runCli } from "../cli/run-cli.ts";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stt, toneWav, tts } from "./helpers.ts";

// The `openai` speech provider against a fake OpenAI API on loopback, through the real `openai` package.
let fake: FakeOpenAI;
let service: TestService;
let alice: TestUser;

const fixture = useServiceWithFakeOpenAI({ SPEECH_PROVIDER: "openai", IMAGES_PROVIDER: "local", LLM_PROVIDER: "local" });
beforeAll(() => void ({ fake, service, alice } = fixture));

describe("text to speech through the openai provider", () => {
  it("streams the upstream's MP3 as it arrives: the first bytes reach the client before the clip is complete", async () => {
    const audio = fakeMp3("streamed", 64 * 1024);
    let release!: () => void;
    fake.speech.next({ audio, chunks: 4, holdAfterFirstChunk: new Promise<void>((resolve) => (release = resolve)) });
    const response = await tts(service, alice.auth, { text: "Welcome aboard, cadet!", voice_id: "onyx" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("audio/mpeg");
    const reader = response.body!.getReader();
    // The upstream is holding the rest of the clip until released: these bytes can only be its first chunk.
    const first = await reader.read();
    expect(first.done).toBe(false);
    expect(Buffer.from(first.value!)).toEqual(Buffer.from(audio.subarray(0, first.value!.length)));
    expect(first.value!.length).toBeLessThanOrEqual(audio.length / 4);
    release();
    const parts = [first.value!];
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) parts.push(chunk.value);
    expect(Buffer.concat(parts)).toEqual(Buffer.from(audio));
    expect(fake.requests.find((r) => r.path === "/v1/audio/speech")?.body).toEqual({
      model: "tts-1",
      voice: "onyx",
      input: "Welcome aboard, cadet!",
      response_format: "mp3",
    });
  });

  it("takes exactly 5,000 characters", async () => {
    const response = await tts(service, alice.auth, { text: "a".repeat(5000) });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    expect((fake.requests.at(-1)?.body as { input: string; voice: string }).input).toHaveLength(5000);
    expect((fake.requests.at(-1)?.body as { voice: string }).voice).toBe("alloy");
  });

  it.each([429, 500])("answers 502 upstream_error when the upstream answers %i, without its words", async (status) => {
    fake.speech.next({ status, errorBody: { error: { message: "Incorrect API key provided: sk-test-secret-key", type: "server_error", code: null } } });
    const error = await expectError(await tts(service, alice.auth, { text: "Hello" }), 502, "upstream_error");
    expect(error.error.message).toContain(String(status));
    expect(JSON.stringify(error)).not.toContain("sk-test");
  });
});

describe("speech to text through the openai provider", () => {
  it("sends the recording for verbose_json and answers text, the detected language as a code, and a confidence from avg_logprob", async () => {
    fake.transcriptions.next({
      text: " Captain Nova, which planet is the bright one low in the west tonight? ",
      language: "english",
      segments: [
        { start: 0, end: 3, avg_logprob: -0.1 },
        { start: 3, end: 4, avg_logprob: -0.5 },
      ],
    });
    const response = await stt(service, alice, "question.wav", toneWav());
    const body = await response.json();
    expect(response.status, JSON.stringify(body)).toBe(200);
    // Weighted by duration: exp((3 * -0.1 + 1 * -0.5) / 4) = exp(-0.2).
    expect(body).toEqual({ text: "Captain Nova, which planet is the bright one low in the west tonight?", language: "en", confidence: expect.closeTo(Math.exp(-0.2), 6) });
    expect(response.headers.get("x-ratelimit-limit")).toBe("60");
    const form = fake.requests.find((r) => r.path === "/v1/audio/transcriptions")?.form;
    expect(form?.fields).toMatchObject({ model: "whisper-1", response_format: "verbose_json" });
    expect(form?.file).toMatchObject({ field: "file", name: "question.wav", type: "audio/wav", size: toneWav().length });
  });

  it("maps Whisper's language names onto ISO codes, and says `und` for one it cannot name", async () => {
    for (const [reported, code] of [["portuguese", "pt"], ["German", "de"], ["ja", "ja"], ["haitian creole", "ht"], ["klingon", "und"]]) {
      fake.transcriptions.next({ language: reported });
      const body = await (await stt(service, alice, "q.wav", toneWav(0.1))).json();
      expect(body.language, reported).toBe(code);
    }
  });

  it("answers an empty text with confidence 0 when nothing was heard", async () => {
    fake.transcriptions.next({ text: "", segments: [] });
    expect(await (await stt(service, alice, "silence.wav", toneWav(0.1))).json()).toEqual({ text: "", confidence: 0, language: "en" });
  });

  it.each([429, 500])("answers 502 upstream_error when the upstream answers %i", async (status) => {
    fake.transcriptions.next({ status });
    await expectError(await stt(service, alice, "q.wav", toneWav(0.1)), 502, "upstream_error");
  });

  it("accepts mp3, ogg and webm by their content, and sends nothing upstream for a file that is not audio", async () => {
    const mp3 = fakeMp3("x", 512);
    const ogg = Buffer.concat([Buffer.from("OggS"), Buffer.alloc(60)]);
    const webm = Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01, 0x42, 0x82, 0x84]), Buffer.from("webm"), Buffer.alloc(40)]);
    for (const [name, bytes] of [["a.mp3", mp3], ["a.ogg", ogg], ["a.webm", webm]] as const) {
      expect((await stt(service, alice, name, bytes)).status, name).toBe(200);
    }
    fake.reset();
    await expectError(await stt(service, alice, "a.webm", Buffer.from("plain text pretending")), 415, "unsupported_media_type");
    expect(fake.requests).toEqual([]);
  });
});

describe("the SDK", () => {
  it("transcribes with voice.stt from bytes and a file name, and speaks with voice.tts", async () => {
    const client = createClient({ baseUrl: service.url, accessToken: alice.accessToken, refreshToken: alice.refreshToken });
    fake.transcriptions.next({ text: "Hello there", language: "french" });
    expect(await client.voice.stt(toneWav(0.2), { filename: "hello.wav" })).toEqual({ text: "Hello there", language: "fr", confidence: expect.any(Number) });
    expect(fake.requests.at(-1)?.form?.file).toMatchObject({ name: "hello.wav", type: "audio/wav" });
    const mp3 = await client.voice.tts({ text: "Hello", voice_id: "echo" });
    expect(Buffer.from(mp3)).toEqual(Buffer.from(fakeMp3("echo:Hello")));
  });
});

describe("the CLI", () => {
  it("says text into an MP3 file and transcribes a recording", async () => {
    const key = await apiKeyFor(service, alice, ["voice"]);
    const dir = await mkdtemp(join(tmpdir(), "persona-voice-"));
    const auth = ["--base-url", service.url, "--api-key", key];
    const said = await runCli(["say", "Welcome aboard", "--voice", "nova", "-o", join(dir, "out.mp3"), ...auth]);
    expect(said.code, said.stderr).toBe(0);
    expect(await readFile(join(dir, "out.mp3"))).toEqual(Buffer.from(fakeMp3("nova:Welcome aboard")));
    await writeFile(join(dir, "question.wav"), toneWav(0.2));
    fake.transcriptions.next({ text: "Which planet is that?", language: "english" });
    const heard = await runCli(["transcribe", join(dir, "question.wav"), "--json", ...auth]);
    expect(heard.code, heard.stderr).toBe(0);
    expect(heard.json()).toEqual({ text: "Which planet is that?", language: "en", confidence: expect.any(Number) });
    const refused = await runCli(["say", "x", "--voice", "robot", ...auth]);
    expect(refused.code).toBe(2);
  });
});
