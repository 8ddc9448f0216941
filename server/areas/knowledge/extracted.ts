/** The document cannot be turned into text; processing ends `failed` with this message. */
export class ExtractionError extends Error {
  override name = "ExtractionError";
}

/** Which per-document limit cut a document's text: its characters, or a PDF's pages. */
export type TextCut = "characters" | "pages";

/** A document's text, and the limit that cut it (null: none did). */
export interface ExtractedText {
  text: string;
  cut: TextCut | null;
}

/**
 * Text gathered part by part up to a number of characters (issue 31 M8: a CSV or JSON file expands
 * as it becomes text, so the conversion stops where the limit is, instead of building the whole
 * text first). The part that crosses the limit is cut to fit, never inside a surrogate pair.
 */
export class BoundedText {
  readonly limit: number;
  // Small parts are joined in batches: a CSV of one-letter rows adds millions of them, and a
  // string each would take many times the text's own size.
  private readonly batches: string[] = [];
  private parts: string[] = [];
  private size = 0;
  private cut = false;

  constructor(limit: number) {
    this.limit = limit;
  }

  /** Whether the limit was reached: nothing more is taken. */
  get full(): boolean {
    return this.cut;
  }

  get length(): number {
    return this.size;
  }

  /** Appends `part`, or what fits of it; false once the limit is reached. */
  add(part: string): boolean {
    if (this.cut) return false;
    const room = this.limit - this.size;
    if (part.length <= room) {
      this.push(part);
      return true;
    }
    let end = room;
    // A high surrogate at the cut would be half a character.
    if (end > 0 && end < part.length && isHighSurrogate(part.charCodeAt(end - 1))) end--;
    this.push(part.slice(0, end));
    this.cut = true;
    return false;
  }

  result(): ExtractedText {
    return { text: [...this.batches, this.parts.join("")].join(""), cut: this.cut ? "characters" : null };
  }

  private push(part: string): void {
    this.parts.push(part);
    this.size += part.length;
    if (this.parts.length === BATCH_PARTS) {
      this.batches.push(this.parts.join(""));
      this.parts = [];
    }
  }
}

const BATCH_PARTS = 4096;
const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
