import { beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { target } from "./support/target.ts";

// A minimal MPEG-1 Layer III file (an ID3v2 header and one silent frame), for when the server
// produced no speech of its own to send back.
const SILENT_MP3 = new Uint8Array([
  0x49, 0x44, 0x33, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  0xff, 0xfb, 0x90, 0x64, ...new Array<number>(413).fill(0),
]);

describe("voice", () => {
  let user: TestUser;
  let speech: Uint8Array<ArrayBuffer> | undefined;

  beforeAll(async () => {
    user = await registerUser("voice");
  });

  // Text to speech works offline (Flite voices); speech to text has no offline provider, so 503
  // provider_unavailable is a right answer there, and the contract declares it.
  op("voice_tts", async () => {
    const json = { text: "Welcome aboard, cadet! Tonight Venus is the bright lantern low in the west.", voice_id: "nova" };
    const answer = await call("voice_tts", { token: user.token, json, expect: [200] });
    if (answer.status !== 200) return;
    expect(answer.contentType).toBe("audio/mpeg");
    expect(answer.bytes.length).toBeGreaterThan(0);
    speech = answer.bytes;
    // The mock answers placeholder bytes; a real server an MP3 (an ID3 tag or an MPEG frame sync) under the voice limit.
    if (!target.stateful) return;
    const [a, b] = [answer.bytes[0], answer.bytes[1]];
    expect(String.fromCharCode(...answer.bytes.subarray(0, 3)) === "ID3" || (a === 0xff && (b! & 0xe0) === 0xe0)).toBe(true);
    expect(answer.headers.get("x-ratelimit-limit")).toMatch(/^(100|1000)$/);
  });

  op("voice_stt", async () => {
    const form = new FormData();
    form.append("audio", new Blob([speech ?? SILENT_MP3], { type: "audio/mpeg" }), "hello.mp3");
    await call("voice_stt", { token: user.token, multipart: form, expect: [200, 503] });
  });
});
