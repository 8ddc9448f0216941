import encode from "png-chunks-encode";
import extract from "png-chunks-extract";
import * as text from "png-chunk-text";
import { describe, expect, it } from "vitest";
import { encodePng, findText, MAX_CHUNKS, MAX_PIXELS, plainPng, PngError, readPng, textChunk, withoutText } from "../../server/areas/cards/png.ts";
import { pngCard } from "./helpers.ts";

// The PNG chunk reader: what it accepts, what it refuses (400 broken, 413 too large to decode).
const refusal = (bytes: Uint8Array) => {
  try {
    readPng(bytes);
  } catch (error) {
    if (error instanceof PngError) return { status: error.status, message: error.message };
    throw error;
  }
  return undefined;
};
const rebuilt = (chunks: { name: string; data: Uint8Array }[]) => Buffer.from(encode(chunks));
const u32 = (...values: number[]) => {
  const buffer = Buffer.alloc(values.length * 4);
  values.forEach((value, index) => buffer.writeUInt32BE(value, index * 4));
  return buffer;
};
const ihdr = (width: number, height: number) => ({ name: "IHDR", data: Buffer.concat([u32(width, height), Buffer.from([8, 6, 0, 0, 0])]) });

describe("readPng", () => {
  it("reads what the chunk libraries write, and writes back the same bytes", () => {
    const bytes = pngCard({ ccv3: { a: 1 }, raw: { chara: "xyz" } });
    const chunks = readPng(bytes);
    expect(chunks.map((c) => c.type)).toEqual(extract(bytes).map((c) => c.name));
    expect(encodePng(chunks).equals(bytes)).toBe(true);
    expect(findText(chunks, "chara")).toBe("xyz");
    expect(findText(chunks, "nothing")).toBeUndefined();
  });

  it("refuses a bad signature, a bad CRC, a cut-off file, bytes after IEND", () => {
    const bytes = pngCard();
    expect(refusal(Buffer.from("not a png at all"))?.status).toBe(400);
    const crc = Buffer.from(bytes);
    crc[crc.length - 1] = crc[crc.length - 1]! ^ 1;
    expect(refusal(crc)?.message).toMatch(/CRC/);
    expect(refusal(bytes.subarray(0, bytes.length - 5))?.message).toMatch(/cut off/);
    expect(refusal(Buffer.concat([bytes, Buffer.from([0])]))?.status).toBe(400);
  });

  it("needs IHDR first and IEND last", () => {
    const chunks = extract(pngCard());
    expect(refusal(rebuilt(chunks.slice(1)))?.message).toMatch(/IHDR/);
    expect(refusal(rebuilt(chunks.slice(0, -1)))?.message).toMatch(/IEND/);
    expect(refusal(rebuilt([chunks[1]!, chunks[0]!, ...chunks.slice(2)]))?.message).toMatch(/IHDR/);
  });

  it("refuses a huge image and too many chunks with 413", () => {
    const chunks = extract(pngCard());
    expect(refusal(rebuilt([ihdr(5000, 5000), ...chunks.slice(1)]))?.status).toBe(413);
    expect(MAX_PIXELS).toBe(4096 * 4096);
    const many = Array.from({ length: MAX_CHUNKS }, () => text.encode("k", "v"));
    expect(refusal(rebuilt([chunks[0]!, ...many, ...chunks.slice(1)]))?.status).toBe(413);
  });

  it("refuses an APNG bomb: too many frames declared, frames adding up past the limit, a frame outside the image", () => {
    const [, ...rest] = extract(pngCard());
    const fctl = (w: number, h: number, x = 0, y = 0) => ({ name: "fcTL", data: Buffer.concat([u32(0, w, h, x, y), Buffer.alloc(6)]) });
    const actl = (frames: number) => ({ name: "acTL", data: u32(frames, 0) });
    expect(refusal(rebuilt([ihdr(100, 100), actl(1_000_000), ...rest]))?.status).toBe(413);
    const frames = Array.from({ length: 20 }, () => fctl(4000, 4000));
    expect(refusal(rebuilt([ihdr(4000, 4000), actl(20), ...frames, ...rest]))?.message).toMatch(/frames add up/);
    expect(refusal(rebuilt([ihdr(100, 100), actl(1), fctl(100, 100, 1, 0), ...rest]))?.status).toBe(400);
    expect(refusal(rebuilt([ihdr(100, 100), actl(2), fctl(100, 100), fctl(50, 50, 50, 50), ...rest]))).toBeUndefined();
  });
});

describe("writing", () => {
  it("drops every text chunk and adds tEXt chunks the libraries read back", () => {
    const chunks = withoutText(readPng(pngCard({ ccv3: { a: 1 }, raw: { Comment: "x" } })));
    expect(chunks.some((c) => c.type === "tEXt")).toBe(false);
    const out = encodePng([...chunks.slice(0, -1), textChunk("ccv3", "QUJD"), chunks.at(-1)!]);
    const decoded = extract(out).filter((c) => c.name === "tEXt").map((c) => text.decode(c.data));
    expect(decoded).toEqual([{ keyword: "ccv3", text: "QUJD" }]);
  });

  it("makes a plain PNG that a reader accepts", () => {
    const bytes = encodePng(plainPng());
    expect(readPng(bytes).map((c) => c.type)).toEqual(["IHDR", "IDAT", "IEND"]);
  });
});
