import { createHash } from "node:crypto";
import { escapeText } from "./html.ts";

// What a share card draws (card-image.ts renders it): its size, its SVG, its version.

export const CARD_WIDTH = 1200;
export const CARD_HEIGHT = 630;

/** Changes when the drawing changes, so that every card's version does. */
const DRAWING_VERSION = "card-v1";

/** What a card shows. */
export interface CardInput {
  personaId: string;
  name: string;
  tagline: string;
  creatorName: string;
  /** The persona's stored avatar link: a path of this service's image files is drawn; anything else is not fetched. */
  avatarUrl: string | null;
}

/** The card's version: 16 hex digits of a digest of what it draws. */
export function cardVersion(card: CardInput): string {
  return createHash("sha256").update(JSON.stringify([DRAWING_VERSION, card.personaId, card.name, card.tagline, card.creatorName, card.avatarUrl])).digest("hex").slice(0, 16);
}

const FONT = `font-family="DejaVu Sans, Noto Sans, Liberation Sans, Arial, sans-serif"`;

/** The card's SVG; every text in it is escaped. */
export function cardSvg(card: CardInput, avatar: Uint8Array | undefined): string {
  const hue = createHash("sha256").update(card.personaId).digest()[0]! * 360 / 256;
  const nameLines = wrap(card.name, 16, 2);
  const nameSize = nameLines.length > 1 ? 60 : 72;
  const taglineTop = 150 + nameLines.length * (nameSize + 10) + 30;
  const taglineLines = wrap(card.tagline, 34, nameLines.length > 1 ? 3 : 4);
  const text = (lines: string[], x: number, y: number, size: number, attributes: string) =>
    lines.map((line, i) => `<text x="${x}" y="${y + i * Math.round(size * 1.25)}" font-size="${size}" ${FONT} ${attributes}>${escapeText(line)}</text>`).join("");
  const portrait = avatar
    ? `<image x="90" y="145" width="340" height="340" preserveAspectRatio="xMidYMid slice" clip-path="url(#round)" xlink:href="data:image/png;base64,${Buffer.from(avatar).toString("base64")}"/>`
    : `<circle cx="260" cy="315" r="170" fill="hsl(${hue.toFixed(0)},45%,88%)"/>${text([initialOf(card.name)], 260, 365, 150, `text-anchor="middle" font-weight="700" fill="hsl(${hue.toFixed(0)},55%,28%)"`)}`;
  return `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="${CARD_WIDTH}" height="${CARD_HEIGHT}" viewBox="0 0 ${CARD_WIDTH} ${CARD_HEIGHT}">
<defs>
<linearGradient id="bg" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="hsl(${hue.toFixed(0)},55%,22%)"/><stop offset="1" stop-color="hsl(${((hue + 40) % 360).toFixed(0)},60%,12%)"/></linearGradient>
<clipPath id="round"><circle cx="260" cy="315" r="170"/></clipPath>
</defs>
<rect width="${CARD_WIDTH}" height="${CARD_HEIGHT}" fill="url(#bg)"/>
${portrait}
<circle cx="260" cy="315" r="174" fill="none" stroke="#ffffff" stroke-opacity="0.85" stroke-width="8"/>
${text(nameLines, 500, 150 + nameSize, nameSize, `font-weight="700" fill="#ffffff"`)}
${text(taglineLines, 500, taglineTop + 34, 34, `fill="#e4e8f2"`)}
${text([`by ${truncate(card.creatorName, 36)}`], 500, 560, 28, `fill="#c3cada"`)}
${text(["Persona"], 1120, 560, 28, `text-anchor="end" font-weight="700" fill="#ffffff" fill-opacity="0.8"`)}
</svg>`;
}

/** The name's first letter, upper-cased, for a persona without a drawable avatar. */
function initialOf(name: string): string {
  const first = [...name.trim()][0] ?? "?";
  return first.toUpperCase();
}

/** A full line that goes on: its last words make room for the ellipsis (a word is cut only when alone). */
function ellipsized(line: string, width: number): string {
  const chars = [...line];
  if (chars.length < width) return `${line}…`;
  const space = line.lastIndexOf(" ");
  return space > 0 ? `${line.slice(0, space)}…` : truncate(line, width);
}

function truncate(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join("").trimEnd()}…`;
}

/**
 * Lines of at most about `width` characters (the fonts are not measured: DejaVu Sans at the card's
 * sizes fits these counts), at most `lines` of them, the last cut with an ellipsis when the text is
 * longer; a word longer than a line is split.
 */
export function wrap(text: string, width: number, lines: number): string[] {
  const words = text.trim().split(/\s+/).filter(Boolean).flatMap((word) => {
    const chars = [...word];
    const parts: string[] = [];
    for (let i = 0; i < chars.length; i += width) parts.push(chars.slice(i, i + width).join(""));
    return parts;
  });
  const out: string[] = [];
  let line = "";
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    const next = line ? `${line} ${word}` : word;
    if ([...next].length <= width) {
      line = next;
      continue;
    }
    out.push(line);
    line = word;
    if (out.length === lines) {
      out[lines - 1] = ellipsized(out[lines - 1]!, width);
      return out;
    }
  }
  if (line) out.push(line);
  if (out.length > lines) out.length = lines;
  return out;
}
