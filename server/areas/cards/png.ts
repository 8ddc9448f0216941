import { crc32, deflateSync } from "node:zlib";

// A PNG card is read chunk by chunk without inflating anything: the card is in an uncompressed
// tEXt chunk, and the pixels are never needed. What is checked is what a reader downstream (a
// browser showing the avatar) would otherwise trip over: signature, CRCs, IHDR first, IEND last,
// and decoded sizes, APNG frames included, before anyone inflates them.

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Chunks in one file; an APNG spends two or three per frame. */
export const MAX_CHUNKS = 10_000;
/** Pixels of the image (IHDR): 4096 x 4096. */
export const MAX_PIXELS = 4096 * 4096;
/** Frames of an animation (acTL). */
export const MAX_FRAMES = 1_000;
/** Pixels of all frames together: what decoding an animation would allocate, 64 M pixels. */
export const MAX_ANIMATION_PIXELS = 64 * 1024 * 1024;

export interface Chunk {
  type: string;
  data: Buffer;
}

/** Why a PNG is refused: 400 when it is broken, 413 when it is too large to decode safely. */
export class PngError extends Error {
  readonly status: 400 | 413;
  constructor(message: string, status: 400 | 413) {
    super(message);
    this.status = status;
  }
}

export function isPng(bytes: Uint8Array): boolean {
  return bytes.length >= SIGNATURE.length && SIGNATURE.equals(Buffer.from(bytes.buffer, bytes.byteOffset, SIGNATURE.length));
}

/** The chunks of a well-formed PNG whose decoded size stays within the limits; PngError otherwise. */
export function readPng(input: Uint8Array): Chunk[] {
  const bytes = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  if (!isPng(bytes)) throw new PngError("The file is not a PNG (bad signature)", 400);
  const chunks: Chunk[] = [];
  let offset = SIGNATURE.length;
  while (offset < bytes.length) {
    if (chunks.length >= MAX_CHUNKS) throw new PngError(`The PNG has more than ${MAX_CHUNKS} chunks`, 413);
    if (offset + 12 > bytes.length) throw new PngError("The PNG is cut off inside a chunk header", 400);
    const length = bytes.readUInt32BE(offset);
    const type = bytes.toString("latin1", offset + 4, offset + 8);
    if (!/^[A-Za-z]{4}$/.test(type)) throw new PngError(`The PNG has a chunk with an invalid type at byte ${offset}`, 400);
    const end = offset + 12 + length;
    if (length > 0x7fffffff || end > bytes.length) throw new PngError(`The PNG is cut off inside its ${type} chunk`, 400);
    const crc = bytes.readUInt32BE(end - 4);
    if (crc32(bytes.subarray(offset + 4, end - 4)) !== crc) throw new PngError(`The PNG's ${type} chunk fails its CRC check`, 400);
    chunks.push({ type, data: bytes.subarray(offset + 8, end - 4) });
    offset = end;
    if (type === "IEND") break;
  }
  if (chunks[0]?.type !== "IHDR" || chunks[0].data.length !== 13) throw new PngError("The PNG does not start with its IHDR chunk", 400);
  if (chunks.at(-1)?.type !== "IEND" || offset !== bytes.length) throw new PngError("The PNG does not end with its IEND chunk", 400);
  checkSizes(chunks);
  return chunks;
}

/** Refuses what would take too much memory to decode: a huge image, or an animation of too many or too large frames. */
function checkSizes(chunks: Chunk[]): void {
  const ihdr = chunks[0]!.data;
  const width = ihdr.readUInt32BE(0);
  const height = ihdr.readUInt32BE(4);
  if (width === 0 || height === 0) throw new PngError("The PNG has a zero width or height", 400);
  if (width * height > MAX_PIXELS) throw new PngError(`The PNG is ${width}x${height}, over ${MAX_PIXELS} pixels`, 413);
  let frames = 0;
  let framePixels = 0;
  for (const { type, data } of chunks) {
    if (type === "acTL") {
      if (data.length !== 8) throw new PngError("The PNG's acTL chunk is malformed", 400);
      if (data.readUInt32BE(0) > MAX_FRAMES) throw new PngError(`The animated PNG declares more than ${MAX_FRAMES} frames`, 413);
    } else if (type === "fcTL") {
      if (data.length !== 26) throw new PngError("The PNG's fcTL chunk is malformed", 400);
      const [w, h, x, y] = [data.readUInt32BE(4), data.readUInt32BE(8), data.readUInt32BE(12), data.readUInt32BE(16)];
      if (w === 0 || h === 0 || x + w > width || y + h > height) throw new PngError("An animation frame of the PNG lies outside the image", 400);
      frames++;
      framePixels += w * h;
      if (frames > MAX_FRAMES) throw new PngError(`The animated PNG has more than ${MAX_FRAMES} frames`, 413);
      if (framePixels > MAX_ANIMATION_PIXELS) throw new PngError(`The animated PNG's frames add up to more than ${MAX_ANIMATION_PIXELS} pixels`, 413);
    }
  }
}

export function encodePng(chunks: readonly Chunk[]): Buffer {
  const parts: Buffer[] = [SIGNATURE];
  for (const { type, data } of chunks) {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, "latin1");
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
    parts.push(head, data, crc);
  }
  return Buffer.concat(parts);
}

/** A tEXt chunk; keyword and text are Latin-1 (a card's text is base64, so ASCII). */
export function textChunk(keyword: string, text: string): Chunk {
  return { type: "tEXt", data: Buffer.concat([Buffer.from(keyword, "latin1"), Buffer.from([0]), Buffer.from(text, "latin1")]) };
}

/** The text of the first tEXt chunk with this keyword. */
export function findText(chunks: readonly Chunk[], keyword: string): string | undefined {
  for (const { type, data } of chunks) {
    if (type !== "tEXt") continue;
    const nul = data.indexOf(0);
    if (nul > 0 && data.toString("latin1", 0, nul) === keyword) return data.toString("latin1", nul + 1);
  }
  return undefined;
}

const TEXT_CHUNKS = new Set(["tEXt", "zTXt", "iTXt"]);

/** The image without its text: a card's chunks hold instructions that must not ride along with a public avatar. */
export function withoutText(chunks: readonly Chunk[]): Chunk[] {
  return chunks.filter(({ type }) => !TEXT_CHUNKS.has(type));
}

/** The same image with these chunks just before IEND. */
export function withChunks(chunks: readonly Chunk[], extra: readonly Chunk[]): Chunk[] {
  return [...chunks.slice(0, -1), ...extra, chunks.at(-1)!];
}

/** A plain square PNG (one colour) for a persona with no stored avatar. */
export function plainPng(size = 256, rgb: [number, number, number] = [0x4b, 0x55, 0x63]): Chunk[] {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const row = Buffer.alloc(1 + size * 3);
  for (let x = 0; x < size; x++) row.set(rgb, 1 + x * 3);
  const raw = Buffer.concat(Array.from({ length: size }, () => row));
  return [
    { type: "IHDR", data: ihdr },
    { type: "IDAT", data: deflateSync(raw) },
    { type: "IEND", data: Buffer.alloc(0) },
  ];
}
