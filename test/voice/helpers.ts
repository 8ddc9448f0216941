import { MPEGDecoder } from "mpg123-decoder";
import type { TestService } from "../support/service.ts";
import { jsonHeaders } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";

export function tts(service: TestService, auth: Record<string, string>, body: unknown) {
  return service.fetch("/v1/voice/tts", { method: "POST", headers: { ...jsonHeaders, ...auth }, body: JSON.stringify(body) });
}

export function stt(service: TestService, user: TestUser | Record<string, string>, filename: string, bytes: Uint8Array, field = "audio") {
  const form = new FormData();
  form.append(field, new Blob([new Uint8Array(bytes)], { type: "application/octet-stream" }), filename);
  const auth = "auth" in user ? (user as TestUser).auth : (user as Record<string, string>);
  return service.fetch("/v1/voice/stt", { method: "POST", headers: auth, body: form });
}

/** A short WAV file: 16 kHz mono 16-bit, a 440 Hz tone. */
export function toneWav(seconds = 0.5): Uint8Array {
  const rate = 16000;
  const samples = Math.round(rate * seconds);
  const wav = Buffer.alloc(44 + samples * 2);
  wav.write("RIFF", 0, "latin1");
  wav.writeUInt32LE(36 + samples * 2, 4);
  wav.write("WAVEfmt ", 8, "latin1");
  wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20);
  wav.writeUInt16LE(1, 22);
  wav.writeUInt32LE(rate, 24);
  wav.writeUInt32LE(rate * 2, 28);
  wav.writeUInt16LE(2, 32);
  wav.writeUInt16LE(16, 34);
  wav.write("data", 36, "latin1");
  wav.writeUInt32LE(samples * 2, 40);
  for (let i = 0; i < samples; i++) wav.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), 44 + i * 2);
  return wav;
}

/** Decodes an MP3 as a listener's player would: its length in seconds and its loudness (RMS, 0-1). */
export async function listen(mp3: Uint8Array): Promise<{ seconds: number; rms: number; errors: number; sampleRate: number }> {
  const decoder = new MPEGDecoder();
  await decoder.ready;
  try {
    const decoded = decoder.decode(mp3);
    const channel = decoded.channelData[0] ?? new Float32Array(0);
    let sum = 0;
    for (const value of channel) sum += value * value;
    return {
      seconds: decoded.samplesDecoded / decoded.sampleRate,
      rms: channel.length ? Math.sqrt(sum / channel.length) : 0,
      errors: decoded.errors.length,
      sampleRate: decoded.sampleRate,
    };
  } finally {
    decoder.free();
  }
}
