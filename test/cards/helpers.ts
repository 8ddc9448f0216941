import extract from "png-chunks-extract";
import encode from "png-chunks-encode";
import * as text from "png-chunk-text";
import { PNG } from "pngjs";
import type { TestService } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";

// Cards built from the field lists of Character Card V2 (malfoyslastname/character-card-spec-v2)
// and V3 (kwaroran/character-card-spec-v3), with a lorebook and text beyond ASCII.

export const LOREBOOK = {
  name: "Sternenkarte 🌌",
  description: "What Nova knows of the sky",
  scan_depth: 3,
  token_budget: 400,
  recursive_scanning: false,
  extensions: { "vendor/book": { colour: "teal" } },
  entries: [
    {
      keys: ["Andromeda", "M31"],
      content: "Andromeda is 2.5 million light-years away; Nova once charted it.",
      extensions: { "vendor/entry": 1 },
      enabled: true,
      insertion_order: 10,
      case_sensitive: false,
      name: "andromeda",
      priority: 5,
      id: 1,
      comment: "galaxy",
      selective: false,
      secondary_keys: [],
      constant: false,
      position: "after_char",
    },
    {
      keys: ["Ærøskøbing"],
      content: "Ærøskøbing is where Nova grew up, by the sea. 🌊",
      extensions: {},
      enabled: true,
      insertion_order: 5,
      position: "before_char",
    },
    { keys: ["ship"], content: "The ship is named Lodestar.", extensions: {}, enabled: true, insertion_order: 1, constant: true },
    { keys: ["secret"], content: "Never inserted.", extensions: {}, enabled: false, insertion_order: 2 },
  ],
};

export function v2Card(overrides: Record<string, unknown> = {}) {
  return {
    spec: "chara_card_v2",
    spec_version: "2.0",
    data: {
      name: "Captain Nóva 星",
      description: "{{char}} is a retired starship captain who explains astronomy with stories from the bridge.",
      personality: "Warm, patient, a little wistful.",
      scenario: "{{user}} visits {{char}} at the observatory.",
      first_mes: "Welcome aboard, {{user}}! I am {{char}}. ✨",
      mes_example: "<START>\n{{user}}: What is that star?\n{{char}}: That is Vega, cadet.",
      creator_notes: "Best with curious users. Ünïcödé notes.",
      system_prompt: "You are {{char}}. Stay in character.",
      post_history_instructions: "Keep answers under 150 words.",
      alternate_greetings: ["Ahoy, {{user}}!", "¡Hola, cadete! 🚀"],
      character_book: LOREBOOK,
      tags: ["space", "astronomy", "日本語"],
      creator: "mara",
      character_version: "1.2",
      extensions: { talkativeness: "0.5", fav: false, world: "Nova", depth_prompt: { prompt: "Be kind.", depth: 4 } },
      ...overrides,
    },
  };
}

export function v3Card(overrides: Record<string, unknown> = {}) {
  const v2 = v2Card(overrides);
  return {
    spec: "chara_card_v3",
    spec_version: "3.0",
    data: {
      ...v2.data,
      nickname: "Nova",
      creator_notes_multilingual: { en: "Best with curious users.", ko: "호기심 많은 사용자에게 최고" },
      source: ["https://cards.example/nova"],
      group_only_greetings: ["Hello, crew!"],
      creation_date: 1_760_000_000,
      modification_date: 1_760_100_000,
      assets: [{ type: "icon", uri: "ccdefault:", name: "main", ext: "png" }],
      ...overrides,
    },
  };
}

/** A small real PNG (pngjs) with the given card chunks, as the chunk libraries write them. */
export function pngCard(chunks: { ccv3?: unknown; chara?: unknown; raw?: Record<string, string> } = {}, size = 8): Buffer {
  const image = new PNG({ width: size, height: size });
  image.data.fill(0x80);
  const base = extract(PNG.sync.write(image));
  const extra = [];
  for (const [keyword, value] of Object.entries(chunks.raw ?? {})) extra.push(text.encode(keyword, value));
  if (chunks.chara !== undefined) extra.push(text.encode("chara", base64(chunks.chara)));
  if (chunks.ccv3 !== undefined) extra.push(text.encode("ccv3", base64(chunks.ccv3)));
  return Buffer.from(encode([...base.slice(0, -1), ...extra, base.at(-1)!]));
}

export const base64 = (value: unknown) => Buffer.from(JSON.stringify(value), "utf8").toString("base64");

/** The card chunks of a PNG, decoded. */
export function cardChunks(bytes: Uint8Array): Record<string, unknown> {
  const found: Record<string, unknown> = {};
  for (const chunk of extract(bytes)) {
    if (chunk.name !== "tEXt") continue;
    const { keyword, text: value } = text.decode(chunk.data);
    found[keyword] = JSON.parse(Buffer.from(value, "base64").toString("utf8"));
  }
  return found;
}

export function uploadCard(service: TestService, user: TestUser, bytes: Uint8Array | string, name = "card.png", type = "application/octet-stream") {
  const form = new FormData();
  form.append("file", new Blob([typeof bytes === "string" ? bytes : new Uint8Array(bytes)], { type }), name);
  return service.fetch("/v1/personas/import", { method: "POST", headers: user.auth, body: form });
}

export function exportCard(service: TestService, user: TestUser, id: string, format?: "json" | "png") {
  return service.fetch(`/v1/personas/${id}/card${format ? `?format=${format}` : ""}`, { headers: user.auth });
}
