import { payloadTooLarge, unsupportedMediaType } from "../../toolkit/http/error-catalogue.ts";

/** The contract's upload limit: 25 MB, read as MiB like the validator's limit. */
export const MAX_RECORDING_BYTES = 25 * 1024 * 1024;

export const AUDIO_KINDS = ["mp3", "wav", "ogg", "webm"] as const;
export type AudioKind = (typeof AUDIO_KINDS)[number];

export const MIME_TYPES: Record<AudioKind, string> = { mp3: "audio/mpeg", wav: "audio/wav", ogg: "audio/ogg", webm: "audio/webm" };

const ascii = (bytes: Uint8Array, start: number, end: number) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1", start, end);

/** What the first bytes say the file is, if it is one of the four. */
export function sniffAudio(bytes: Uint8Array): AudioKind | undefined {
  if (bytes.length < 4) return undefined;
  if (ascii(bytes, 0, 4) === "RIFF" && ascii(bytes, 8, 12) === "WAVE") return "wav";
  if (ascii(bytes, 0, 4) === "OggS") return "ogg";
  // EBML header, with the `webm` doc type among its first elements.
  if (bytes[0] === 0x1a && bytes[1] === 0x45 && bytes[2] === 0xdf && bytes[3] === 0xa3) return ascii(bytes, 4, 64).includes("webm") ? "webm" : undefined;
  if (ascii(bytes, 0, 3) === "ID3") return "mp3";
  // An MPEG audio frame header: 11 sync bits, a version that exists, layer III.
  if (bytes[0] === 0xff && (bytes[1]! & 0xe0) === 0xe0 && (bytes[1]! & 0x18) !== 0x08 && (bytes[1]! & 0x06) === 0x02) return "mp3";
  return undefined;
}

/**
 * The recording's kind, checked by file name and by content (the contract says both): 415 for
 * anything else, or for a file whose content is not what its name says; 413 over 25 MB.
 */
export function checkRecording(filename: string, bytes: Uint8Array): AudioKind {
  if (bytes.length > MAX_RECORDING_BYTES) {
    throw payloadTooLarge(`A recording may have at most ${MAX_RECORDING_BYTES} bytes; this one has ${bytes.length}`);
  }
  const dot = filename.lastIndexOf(".");
  const extension = dot < 0 ? "" : filename.slice(dot + 1).toLowerCase();
  const accepted = AUDIO_KINDS.map((kind) => `.${kind}`).join(", ");
  if (!(AUDIO_KINDS as readonly string[]).includes(extension)) {
    throw unsupportedMediaType(`Accepted recordings are ${accepted}; got ${extension ? `.${extension}` : "a file without an extension"}`);
  }
  const sniffed = sniffAudio(bytes);
  if (sniffed !== extension) {
    throw unsupportedMediaType(`The file is named .${extension} but its content is ${sniffed ? `${sniffed} audio` : "not mp3, wav, ogg or webm audio"}`);
  }
  return sniffed;
}
