import { createAvatar } from "@dicebear/core";
import { lorelei, notionists, openPeeps, pixelArt, thumbs } from "@dicebear/collection";

/**
 * Deterministic drawings as SVG: the same prompt, style and size always give the same picture,
 * and different prompts give visibly different ones. Avatars are DiceBear portraits (only its CC0
 * styles, so nothing needs attribution); banners and scenes are landscapes drawn from a seeded
 * random generator, nudged by words of the prompt (night, sea, planet, ...).
 */

/** 32-bit FNV-1a. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** mulberry32: a small seeded generator, plenty for picking shapes and colours. */
function generator(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const AVATAR_STYLES = [lorelei, notionists, openPeeps, pixelArt, thumbs];
const AVATAR_BACKGROUNDS = ["b6e3f4", "c0aede", "d1d4f9", "ffd5dc", "ffdfbf", "c7f0d8", "f9e79f", "aed6f1"];

function hsl(h: number, s: number, l: number): string {
  return `hsl(${Math.round(((h % 360) + 360) % 360)},${Math.round(s)}%,${Math.round(l)}%)`;
}

export function avatarSvg(prompt: string, width: number, height: number): string {
  const random = generator(hash(`avatar|${prompt}`));
  const style = AVATAR_STYLES[Math.floor(random() * AVATAR_STYLES.length)]!;
  const background = AVATAR_BACKGROUNDS[Math.floor(random() * AVATAR_BACKGROUNDS.length)]!;
  const side = Math.min(width, height);
  const portrait = createAvatar(style as Parameters<typeof createAvatar>[0], { seed: prompt, size: side, backgroundColor: [background] }).toString();
  const x = (width - side) / 2;
  const y = (height - side) / 2;
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">` +
    `<defs><linearGradient id="bg" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#${background}"/><stop offset="1" stop-color="#${background}" stop-opacity="0.55"/></linearGradient></defs>` +
    `<rect width="${width}" height="${height}" fill="#ffffff"/><rect width="${width}" height="${height}" fill="url(#bg)"/>` +
    `<g transform="translate(${x} ${y})">${portrait}</g></svg>`
  );
}

/** A ridge line across the picture: a closed path from a random walk, filled to the bottom. */
function ridge(random: () => number, width: number, height: number, base: number, roughness: number, colour: string): string {
  const steps = 8 + Math.floor(random() * 8);
  let y = base;
  const points: string[] = [`M0 ${height}`, `L0 ${y.toFixed(1)}`];
  for (let i = 1; i <= steps; i++) {
    y = Math.min(height * 0.95, Math.max(height * 0.2, y + (random() - 0.5) * roughness * height));
    const x = (i / steps) * width;
    const cx = x - width / steps / 2;
    points.push(`Q${cx.toFixed(1)} ${(y - random() * roughness * height * 0.6).toFixed(1)} ${x.toFixed(1)} ${y.toFixed(1)}`);
  }
  points.push(`L${width} ${height}`, "Z");
  return `<path d="${points.join(" ")}" fill="${colour}"/>`;
}

export function sceneSvg(prompt: string, style: "banner" | "scene", width: number, height: number): string {
  const text = prompt.toLowerCase();
  const random = generator(hash(`${style}|${width}x${height}|${prompt}`));
  const night = /night|star|space|galaxy|cosmic|moon|dark|nebula|midnight/.test(text) || random() < 0.2;
  const water = /sea|ocean|beach|lake|water|harbou?r|shore|river|coast/.test(text);
  const planet = /planet|ring|saturn|orbit|starship|spaceship/.test(text);
  const hue = random() * 360;
  const sky = night
    ? [hsl(hue + 220, 55, 8), hsl(hue + 250, 45, 22)]
    : [hsl(hue + 190, 65, 62), hsl(hue + 30, 80, 82)];
  const parts: string[] = [
    `<defs><linearGradient id="sky" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="${sky[0]}"/><stop offset="1" stop-color="${sky[1]}"/></linearGradient>` +
      `<radialGradient id="glow"><stop offset="0" stop-color="#fff" stop-opacity="0.9"/><stop offset="1" stop-color="#fff" stop-opacity="0"/></radialGradient></defs>`,
    `<rect width="${width}" height="${height}" fill="url(#sky)"/>`,
  ];
  if (night) {
    const stars = 80 + Math.floor(random() * 120);
    for (let i = 0; i < stars; i++) {
      const r = 0.6 + random() * 1.8;
      parts.push(`<circle cx="${(random() * width).toFixed(1)}" cy="${(random() * height * 0.7).toFixed(1)}" r="${r.toFixed(2)}" fill="#fff" opacity="${(0.4 + random() * 0.6).toFixed(2)}"/>`);
    }
  }
  // A sun, moon or planet, with a glow; a ringed one when the prompt talks of planets.
  const bodyX = width * (0.15 + random() * 0.7);
  const bodyY = height * (0.15 + random() * 0.3);
  const bodyR = Math.min(width, height) * (planet ? 0.14 + random() * 0.1 : 0.06 + random() * 0.06);
  const bodyColour = night ? hsl(hue + 40 + random() * 80, 50, 70) : hsl(40 + random() * 20, 95, 70);
  parts.push(`<circle cx="${bodyX.toFixed(1)}" cy="${bodyY.toFixed(1)}" r="${(bodyR * 2.2).toFixed(1)}" fill="url(#glow)" opacity="0.35"/>`);
  parts.push(`<circle cx="${bodyX.toFixed(1)}" cy="${bodyY.toFixed(1)}" r="${bodyR.toFixed(1)}" fill="${bodyColour}"/>`);
  if (planet) {
    const tilt = -25 + random() * 50;
    parts.push(
      `<ellipse cx="${bodyX.toFixed(1)}" cy="${bodyY.toFixed(1)}" rx="${(bodyR * 1.9).toFixed(1)}" ry="${(bodyR * 0.45).toFixed(1)}" fill="none" stroke="${hsl(hue + 20, 40, 80)}" stroke-width="${(bodyR * 0.12).toFixed(1)}" transform="rotate(${tilt.toFixed(1)} ${bodyX.toFixed(1)} ${bodyY.toFixed(1)})" opacity="0.85"/>`,
    );
  }
  // Ridges from far (pale) to near (dark); a banner keeps its horizon lower and flatter.
  const layers = 3 + Math.floor(random() * 2);
  const horizon = style === "banner" ? 0.62 : 0.5;
  const roughness = style === "banner" ? 0.12 : 0.2;
  for (let i = 0; i < layers; i++) {
    const depth = i / (layers - 1);
    const lightness = night ? 30 - depth * 24 : 62 - depth * 40;
    parts.push(ridge(random, width, height, height * (horizon + depth * 0.18), roughness * (1 - depth * 0.4), hsl(hue + 150 + depth * 40, 35, lightness)));
  }
  if (water) {
    const top = height * 0.8;
    parts.push(`<rect y="${top.toFixed(1)}" width="${width}" height="${(height - top).toFixed(1)}" fill="${hsl(hue + 200, 55, night ? 18 : 45)}" opacity="0.9"/>`);
    for (let i = 0; i < 12; i++) {
      const y = top + random() * (height - top);
      const x = random() * width;
      parts.push(`<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${(width * (0.05 + random() * 0.15)).toFixed(1)}" height="2" fill="#fff" opacity="0.35"/>`);
    }
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">${parts.join("")}</svg>`;
}
