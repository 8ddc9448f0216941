import { FilePart } from "./arbitrary.ts";

// Bodies as bytes. A fuzzed body may hold what JSON.stringify cannot write (-0, 1e309, a lone
// surrogate as raw bytes, bytes that are not UTF-8), so values are serialized here, with `Raw`
// pieces written exactly as given.

/** A piece of a JSON text written as these bytes, not serialized. */
export class Raw {
  readonly bytes: Uint8Array;
  readonly label: string;
  constructor(label: string, bytes: Uint8Array | string) {
    this.label = label;
    this.bytes = typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes;
  }
  toJSON(): string {
    return `<raw ${this.label}>`;
  }
}

/** The WTF-8 bytes of one UTF-16 code unit, as a lone surrogate would be written by a careless encoder. */
export function wtf8(unit: number): Uint8Array {
  return new Uint8Array([0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)]);
}

const encoder = new TextEncoder();

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function jsonParts(value: unknown, out: Uint8Array[]): void {
  if (value instanceof Raw) out.push(value.bytes);
  else if (value instanceof FilePart) out.push(encoder.encode(JSON.stringify(value.filename)));
  else if (Array.isArray(value)) {
    out.push(encoder.encode("["));
    value.forEach((item, i) => {
      if (i) out.push(encoder.encode(","));
      jsonParts(item === undefined ? null : item, out);
    });
    out.push(encoder.encode("]"));
  } else if (value && typeof value === "object") {
    out.push(encoder.encode("{"));
    let first = true;
    for (const [key, item] of Object.entries(value)) {
      if (item === undefined) continue;
      if (!first) out.push(encoder.encode(","));
      first = false;
      // JSON.stringify escapes lone surrogates (\udXXX), which is the escaped form.
      out.push(encoder.encode(`${JSON.stringify(key)}:`));
      jsonParts(item, out);
    }
    out.push(encoder.encode("}"));
  } else out.push(encoder.encode(JSON.stringify(value) ?? "null"));
}

export function jsonBytes(value: unknown): Uint8Array {
  const out: Uint8Array[] = [];
  jsonParts(value, out);
  return concat(out);
}

const text = (value: unknown): Uint8Array =>
  value instanceof Raw ? value.bytes : encoder.encode(typeof value === "string" ? value : JSON.stringify(value) ?? "");

/** An `application/x-www-form-urlencoded` body; raw pieces are percent-encoded byte by byte. */
export function formBytes(value: unknown): Uint8Array {
  if (!value || typeof value !== "object" || Array.isArray(value)) return text(value);
  const pct = (bytes: Uint8Array) => [...bytes].map((b) => (/[A-Za-z0-9*\-._]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`)).join("");
  return encoder.encode(
    Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${pct(encoder.encode(k))}=${pct(text(v))}`)
      .join("&"),
  );
}

export const BOUNDARY = "----personafuzz7MA4YWxkTrZu0gW";

/** A `multipart/form-data` body with BOUNDARY: file parts for FileParts, text parts for the rest. */
export function multipartBytes(value: unknown): Uint8Array {
  if (!value || typeof value !== "object" || Array.isArray(value)) return text(value);
  const parts: Uint8Array[] = [];
  for (const [name, item] of Object.entries(value)) {
    if (item === undefined) continue;
    if (item instanceof FilePart) {
      parts.push(encoder.encode(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"; filename="${item.filename.replace(/"/g, "%22")}"\r\nContent-Type: ${item.contentType}\r\n\r\n`));
      parts.push(item.bytes);
      parts.push(encoder.encode("\r\n"));
    } else {
      parts.push(encoder.encode(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n`));
      parts.push(text(item));
      parts.push(encoder.encode("\r\n"));
    }
  }
  parts.push(encoder.encode(`--${BOUNDARY}--\r\n`));
  return concat(parts);
}

/** The body bytes and content-type header of `value` sent as `contentType`. */
export function encodeBody(contentType: string, value: unknown): { bytes: Uint8Array; header: string } {
  if (contentType === "multipart/form-data") return { bytes: multipartBytes(value), header: `multipart/form-data; boundary=${BOUNDARY}` };
  if (contentType === "application/x-www-form-urlencoded") return { bytes: formBytes(value), header: contentType };
  return { bytes: jsonBytes(value), header: contentType };
}

/** A short, printable account of a value for reports: long strings cut, raw pieces named. */
export function describe(value: unknown, limit = 600): string {
  const shown = JSON.stringify(value, (_key, v: unknown) => {
    if (v instanceof FilePart) return `<file ${v.filename}, ${v.bytes.length} bytes>`;
    if (typeof v === "string" && v.length > 80) return `${v.slice(0, 40)}…(${v.length} chars)…${v.slice(-20)}`;
    return v;
  });
  return shown === undefined ? "undefined" : shown.length > limit ? `${shown.slice(0, limit)}…` : shown;
}
