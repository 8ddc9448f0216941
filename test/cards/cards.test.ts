import { beforeAll, describe, expect, it } from "vitest";
import { MemoryBlobStore } from "../../server/toolkit/providers/blobs/memory.ts";
import { archiveOf, purgeDeletedAccounts } from "../support/account-data.ts";
import { expectError } from "../support/assertions.ts";
import { useTestService } from "../support/fixtures.ts";
import { sendRaw } from "../support/raw.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { fetchPng, pathOf } from "../images/helpers.ts";
import { cardChunks, exportCard, LOREBOOK, pngCard, uploadCard, v2Card, v3Card } from "./helpers.ts";

const blobs = new MemoryBlobStore();
// No automatic avatars: their files would blur the count of what a refused import leaves behind.
const fixture = useTestService({ providers: { blobs }, env: { AUTO_AVATARS: "false" } });

/** The creator plan's 200 personas: these tests import many. */
const creatorPlan = (user: TestUser) => fixture.service.services.db.knex("users").where({ id: user.id }).update({ plan: "creator" });
beforeAll(async () => creatorPlan(fixture.alice));

const NAME = "Captain Nóva 星";
// Macros stay as the card wrote them: the reply engine fills them (issue 34 item 2).
const INSTRUCTIONS = [
  "You are {{char}}. Stay in character.",
  "## Description\n{{char}} is a retired starship captain who explains astronomy with stories from the bridge.",
  "## Personality\nWarm, patient, a little wistful.",
  "## Scenario\n{{user}} visits {{char}} at the observatory.",
  "## Post-history instructions\nKeep answers under 150 words.",
].join("\n\n");

async function imported(user: TestUser, bytes: Uint8Array | string, name?: string) {
  const response = await uploadCard(fixture.service, user, bytes, name);
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(201);
  return body;
}

async function cardJson(user: TestUser, id: string) {
  const response = await exportCard(fixture.service, user, id, "json");
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(200);
  return body;
}

const counts = async () => {
  const knex = fixture.service.services.db.knex;
  const [personas, cards, avatars] = await Promise.all(["personas", "persona_cards", "card_avatars"].map(async (table) => Number((await knex(table).count({ n: "*" }).first())!.n)));
  return { personas, cards, avatars, files: blobs.blobs.size };
};

describe("importing a card", () => {
  it("maps a V2 JSON card onto a persona: instructions in sections, greeting, public description", async () => {
    const persona = await imported(fixture.alice, JSON.stringify(v2Card()), "nova.json");
    expect(persona).toMatchObject({
      name: NAME,
      description: `${NAME} is a retired starship captain who explains astronomy with stories from the bridge.`,
      instructions: INSTRUCTIONS,
      greeting_message: "Welcome aboard, {{user}}! I am {{char}}. ✨",
      is_public: false,
      category: "character",
      creator_id: fixture.alice.id,
      avatar_url: null,
    });
    const card = await cardJson(fixture.alice, persona.id);
    expect(card.spec).toBe("chara_card_v3");
    // The export gives the card back as it came, macros and all.
    expect(card.data).toMatchObject({
      ...v2Card().data,
      extensions: { ...v2Card().data.extensions, persona: { category: "character", voice_id: "alloy" } },
    });
    expect(card.data.first_mes).toBe(v2Card().data.first_mes);
    expect(card.data.extensions.persona.instructions_in).toBeUndefined();
  });

  it("exports the card's own texts for a persona imported before instructions kept their macros", async () => {
    const persona = await imported(fixture.alice, JSON.stringify(v2Card()), "nova.json");
    // As an import stored them before: `{{char}}` filled with the name, `{{user}}` left.
    await fixture.service.services.db.knex("personas").where({ id: persona.id }).update({ instructions: INSTRUCTIONS.replaceAll("{{char}}", NAME) });
    const card = await cardJson(fixture.alice, persona.id);
    expect(card.data).toMatchObject({ system_prompt: v2Card().data.system_prompt, description: v2Card().data.description, scenario: v2Card().data.scenario });
    expect(card.data.extensions.persona.instructions_in).toBeUndefined();
  });

  it("keeps every V3 field and unknown extension verbatim for export", async () => {
    const source = v3Card();
    const persona = await imported(fixture.alice, JSON.stringify(source), "nova.json");
    const { data } = await cardJson(fixture.alice, persona.id);
    const { first_mes: _, extensions, ...rest } = source.data;
    expect(data).toMatchObject(rest);
    // The service's own extension: what a card cannot say, the persona's model and its settings among it (issue 40).
    expect(data.extensions).toEqual({ ...extensions, persona: { category: "character", voice_id: "alloy", model: persona.model, model_settings: {} } });
    expect(data.character_book).toEqual({ ...LOREBOOK, entries: LOREBOOK.entries.map((entry) => ({ secondary_keys: [], ...entry })) });
  });

  it("drops lorebook fields a card tool left null, so that the export keeps to the contract", async () => {
    const book = {
      name: null,
      scan_depth: null,
      token_budget: 100,
      extensions: null,
      entries: [{ keys: ["x"], content: "X", extensions: null, enabled: true, insertion_order: 1, id: null, comment: null, priority: null, position: null, case_sensitive: null, vendor_field: null }],
    };
    const persona = await imported(fixture.alice, JSON.stringify(v2Card({ character_book: book })), "nulls.json");
    const { data } = await cardJson(fixture.alice, persona.id);
    expect(data.character_book).toEqual({
      token_budget: 100,
      extensions: {},
      entries: [{ keys: ["x"], secondary_keys: [], content: "X", extensions: {}, enabled: true, insertion_order: 1, vendor_field: null }],
    });
  });

  it("reads a PNG card, ccv3 winning over chara, and makes the image the avatar without its text chunks", async () => {
    const png = pngCard({ chara: v2Card({ name: "Old V2" }), ccv3: v3Card(), raw: { Comment: "made by a tool" } });
    const persona = await imported(fixture.alice, png);
    expect(persona.name).toBe(NAME);
    expect(persona.avatar_url).toMatch(/\/v1\/images\/files\/[0-9a-f]{32}\.png$/);
    const { bytes, png: decoded } = await fetchPng(fixture.service, persona.avatar_url);
    expect([decoded.width, decoded.height]).toEqual([8, 8]);
    // The avatar is shown to anyone: the card's instructions must not ride along.
    expect(cardChunks(bytes)).toEqual({});
    expect(bytes.includes(Buffer.from("tEXt"))).toBe(false);
  });

  it("reads the chara chunk when there is no ccv3", async () => {
    const persona = await imported(fixture.alice, pngCard({ chara: v2Card({ name: "Only V2" }) }));
    expect(persona.name).toBe("Only V2");
  });

  it("reads a V1 card (fields at the top) and a card without texts gets a one-line instruction", async () => {
    const persona = await imported(fixture.alice, JSON.stringify({ name: "Bare", first_mes: "Hi." }), "bare.json");
    expect(persona).toMatchObject({ name: "Bare", instructions: "You are Bare.", description: "", greeting_message: "Hi." });
  });

  it("cuts a public description over 300 characters at a word, the full text staying in the instructions", async () => {
    const long = `${"Stars and stories. ".repeat(30)}The end.`;
    const persona = await imported(fixture.alice, JSON.stringify(v2Card({ description: long })), "long.json");
    expect([...persona.description].length).toBeLessThanOrEqual(300);
    expect(persona.description.endsWith("…")).toBe(true);
    expect(persona.instructions).toContain(long.trim());
  });
});

describe("refused cards leave nothing behind", () => {
  async function refused(bytes: Uint8Array | string, status: number, code: string, name = "card.bin") {
    const before = await counts();
    const body = await expectError(await uploadCard(fixture.service, fixture.alice, bytes, name), status, code);
    expect(await counts()).toEqual(before);
    return body;
  }

  it("400 for a JSON file that is not JSON, or not UTF-8", async () => {
    expect((await refused("{ not json", 400, "invalid_request")).error.message).toMatch(/not JSON/);
    await refused(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), 400, "invalid_request");
  });

  it("400 naming the field for a missing or blank name, or a field of the wrong type", async () => {
    expect((await refused(JSON.stringify(v2Card({ name: undefined })), 400, "invalid_request")).error.details.errors[0].path).toBe("/file/data/name");
    await refused(JSON.stringify(v3Card({ name: "   " })), 400, "invalid_request");
    expect((await refused(JSON.stringify(v2Card({ tags: "space" })), 400, "invalid_request")).error.details.errors[0].path).toBe("/file/data/tags");
    await refused(JSON.stringify(v2Card({ character_book: { entries: [{ keys: ["a"] }] } })), 400, "invalid_request");
    await refused(JSON.stringify({ spec: "chara_card_v9", data: { name: "x" } }), 400, "invalid_request");
    await refused(JSON.stringify(["not", "a", "card"]), 400, "invalid_request");
  });

  it("400 over a persona's limits: a name over 80 characters, instructions over 32,000", async () => {
    expect((await refused(JSON.stringify(v2Card({ name: "N".repeat(81) })), 400, "invalid_request")).error.details.errors[0].path).toBe("/file/data/name");
    const body = await refused(JSON.stringify(v2Card({ description: "d".repeat(20_000), personality: "p".repeat(12_000) })), 400, "invalid_request");
    expect(body.error.message).toMatch(/description 20000.*personality 12000/);
  });

  it("413 for more than 2 MB of card JSON, in a file or in a PNG", async () => {
    const big = JSON.stringify(v2Card({ creator_notes: "x".repeat(2 * 1024 * 1024) }));
    await refused(big, 413, "payload_too_large", "big.json");
    await refused(pngCard({ ccv3: v3Card({ creator_notes: "x".repeat(2 * 1024 * 1024) }) }), 413, "payload_too_large");
  });

  it("415 for a file that is neither JSON nor PNG, and for a body that is not multipart", async () => {
    await refused("GIF89a....", 415, "unsupported_media_type", "card.gif");
    // A JSON body where the contract takes multipart: sent raw.
    await expectError(await sendRaw(fixture.service, "POST", "/v1/personas/import", { body: v2Card(), headers: fixture.alice.auth }), 415, "unsupported_media_type");
  });

  it("400 for a broken PNG: bad CRC, cut off, no card chunk, card chunk not base64", async () => {
    const good = pngCard({ ccv3: v3Card() });
    const badCrc = Buffer.from(good);
    badCrc[good.length - 20] = badCrc[good.length - 20]! ^ 0xff;
    await refused(badCrc, 400, "invalid_request");
    await refused(good.subarray(0, good.length - 30), 400, "invalid_request");
    expect((await refused(pngCard(), 400, "invalid_request")).error.message).toMatch(/no character card/);
    await refused(pngCard({ raw: { ccv3: "!!! not base64 !!!" } }), 400, "invalid_request");
    await refused(pngCard({ raw: { ccv3: Buffer.from("not json").toString("base64") } }), 400, "invalid_request");
  });

  it("413 for an animated PNG whose frames would decode to too many pixels, before anything is inflated", async () => {
    const { default: extract } = await import("png-chunks-extract");
    const { default: encode } = await import("png-chunks-encode");
    // An 8x8 image whose header claims 2000x2000: never inflated, so the pixels need not match.
    const chunks = extract(pngCard({ ccv3: v3Card() }));
    const ihdr = Buffer.from(chunks[0]!.data);
    ihdr.writeUInt32BE(2000, 0);
    ihdr.writeUInt32BE(2000, 4);
    chunks[0] = { name: "IHDR", data: ihdr };
    const actl = Buffer.alloc(8);
    actl.writeUInt32BE(100, 0);
    // 100 frames of 2000x2000: 400 M pixels to decode, over the 64 M limit.
    const frames = Array.from({ length: 100 }, (_, index) => {
      const fctl = Buffer.alloc(26);
      fctl.writeUInt32BE(index, 0);
      fctl.writeUInt32BE(2000, 4);
      fctl.writeUInt32BE(2000, 8);
      return { name: "fcTL", data: fctl };
    });
    const bomb = Buffer.from(encode([chunks[0]!, { name: "acTL", data: actl }, ...frames, ...chunks.slice(1)]));
    expect((await refused(bomb, 413, "payload_too_large")).error.message).toMatch(/frames add up/);
  });

  it("400 naming the limit and the field for a lorebook of 20,000 keys, in a JSON file or a PNG (issue 31 H2)", async () => {
    const entries = Array.from({ length: 200 }, (_, i) => ({ keys: Array.from({ length: 100 }, (_, k) => `key ${i}.${k}`), content: `Entry ${i}`, extensions: {}, enabled: true, insertion_order: i }));
    const card = v2Card({ character_book: { ...LOREBOOK, entries } });
    for (const bytes of [JSON.stringify(card), pngCard({ ccv3: card })]) {
      const body = await refused(bytes, 400, "invalid_request", "many-keys.json");
      expect(body.error.details.errors[0].path).toBe("/file/data/character_book/entries/100/keys");
      expect(body.error.message).toMatch(/over the limit of 10000 keys a book/);
    }
  });

  it("400 naming the limit for too many keys in an entry, a key too long, too many characters of keys in a book (issue 31 H2)", async () => {
    const book = (entries: { keys: string[]; secondary_keys?: string[] }[]) => ({ ...LOREBOOK, entries: entries.map((e, i) => ({ ...e, content: `Entry ${i}`, extensions: {}, enabled: true, insertion_order: i })) });
    const keys = (count: number, length: number, tag = "") => Array.from({ length: count }, (_, k) => `${tag}${k}:`.padEnd(length, "x"));
    let body = await refused(JSON.stringify(v2Card({ character_book: book([{ keys: ["a"] }, { keys: keys(60, 5), secondary_keys: keys(41, 5, "s") }]) })), 400, "invalid_request");
    expect(body.error.details.errors[0].path).toBe("/file/data/character_book/entries/1/keys");
    expect(body.error.message).toMatch(/101 keys, over the limit of 100 keys an entry/);
    body = await refused(JSON.stringify(v2Card({ character_book: book([{ keys: ["ok"], secondary_keys: ["fine", "also fine", "k".repeat(101)] }]) })), 400, "invalid_request");
    expect(body.error.details.errors[0].path).toBe("/file/data/character_book/entries/0/secondary_keys/2");
    expect(body.error.message).toMatch(/is 101 characters, over the limit of 100 characters a key/);
    // Ten entries of a hundred 100-character keys make 100,000 characters; one more key is over.
    body = await refused(JSON.stringify(v2Card({ character_book: book([...Array.from({ length: 10 }, (_, i) => ({ keys: keys(100, 100, `e${i}-`) })), { keys: ["one more"] }]) })), 400, "invalid_request");
    expect(body.error.details.errors[0].path).toBe("/file/data/character_book/entries/10/keys");
    expect(body.error.message).toMatch(/100008 characters, over the limit of 100000 characters of keys a book/);
  });

  /** JSON text of `levels` objects nested in one another (`{}` is one level), written out rather than stringified. */
  const nestedJson = (levels: number, open = '{"a":', empty = "{}", close = "}") => `${open.repeat(levels - 1)}${empty}${close.repeat(levels - 1)}`;
  /** The card's JSON with `value`'s JSON text where the string `"DEEP"` was. */
  const withDeep = (card: unknown, value: string) => JSON.stringify(card).replace('"DEEP"', value);

  it("400, not 500, for a card nested 5,000 deep, wherever it carries the JSON and however it comes (issue 31 L4)", async () => {
    const deep = nestedJson(5_000);
    const deepArrays = nestedJson(5_000, "[", "[]", "]");
    const entry = (fields: Record<string, unknown>) => ({ keys: ["k"], content: "c", extensions: {}, enabled: true, insertion_order: 0, ...fields });
    const cases: [string, string][] = [
      [withDeep(v2Card({ extensions: "DEEP" }), deep), "/file/data/extensions"],
      [withDeep(v3Card({ extensions: { vendor: "DEEP" } }), deepArrays), "/file/data/extensions"],
      [withDeep({ name: "V1", first_mes: "Hi.", extensions: "DEEP" }, deep), "/file/extensions"],
      [withDeep(v2Card({ character_book: { ...LOREBOOK, extensions: "DEEP" } }), deep), "/file/data/character_book/extensions"],
      [withDeep(v2Card({ character_book: { ...LOREBOOK, entries: [entry({}), entry({ extensions: "DEEP" })] } }), deep), "/file/data/character_book/entries/1/extensions"],
      [withDeep(v2Card({ character_book: { ...LOREBOOK, entries: [entry({ "vendor/field": "DEEP" })] } }), deepArrays), "/file/data/character_book/entries/0/vendor~1field"],
      [withDeep(v3Card({ assets: [{ type: "icon", uri: "ccdefault:", name: "main", ext: "png", meta: "DEEP" }] }), deep), "/file/data/assets"],
      [withDeep({ ...v3Card(), tool_state: "DEEP" }, deep), "/file/tool_state"],
    ];
    for (const [json, path] of cases) {
      for (const bytes of [json, pngCard({ raw: { ccv3: Buffer.from(json).toString("base64") } }), pngCard({ raw: { chara: Buffer.from(json).toString("base64") } })]) {
        const body = await refused(bytes, 400, "invalid_request", "deep.json");
        expect(body.error.details.errors[0].path, path).toBe(path);
        expect(body.error.message).toMatch(/more than 64 levels deep/);
      }
    }
  });

  it("takes a card nested exactly 64 levels deep, and exports it; 65 is refused (issue 31 L4)", async () => {
    // The card is level 1, `data` 2, `extensions` 3: 62 levels from `extensions` down make 64.
    const persona = await imported(fixture.alice, withDeep(v2Card({ extensions: "DEEP" }), nestedJson(62)), "deep-ok.json");
    const { data } = await cardJson(fixture.alice, persona.id);
    let depth = 0;
    for (let at: unknown = data.extensions; at && typeof at === "object"; at = (at as { a?: unknown }).a) depth++;
    expect(depth).toBe(62);
    await refused(withDeep(v2Card({ extensions: "DEEP" }), nestedJson(63)), 400, "invalid_request", "deep.json");
  });

  it("400, not 500, for text PostgreSQL refuses anywhere in the card: NUL, a lone surrogate (issue 31 L4)", async () => {
    const cases: [unknown, string, RegExp][] = [
      [v2Card({ description: "a\u0000b" }), "/file/data/description", /NUL/],
      [v2Card({ extensions: { vendor: { note: "x\ud800y" } } }), "/file/data/extensions/vendor/note", /lone UTF-16 surrogate/],
      [v3Card({ extensions: { ["k\udc00"]: 1 } }), "/file/data/extensions", /property name .*lone UTF-16 surrogate/],
      [v2Card({ character_book: { ...LOREBOOK, entries: [{ ...LOREBOOK.entries[0], keys: ["ok", "bad\u0000"] }] } }), "/file/data/character_book/entries/0/keys/1", /NUL/],
    ];
    for (const [card, path, message] of cases) {
      for (const bytes of [JSON.stringify(card), pngCard({ ccv3: card })]) {
        const body = await refused(bytes, 400, "invalid_request", "odd.json");
        expect(body.error.details.errors[0].path).toBe(path);
        expect(body.error.message).toMatch(message);
      }
    }
  });

  it("402 past the plan's persona limit, and the avatar file is deleted again", async () => {
    const bob = await registerUser(fixture.service);
    for (let i = 0; i < 3; i++) await imported(bob, JSON.stringify({ name: `Filler ${i}` }), "f.json");
    const before = await counts();
    await expectError(await uploadCard(fixture.service, bob, pngCard({ ccv3: v3Card() })), 402, "plan_limit_exceeded");
    expect(await counts()).toEqual(before);
  });
});

describe("exporting a card", () => {
  it("gives back an equal persona on import, unicode and lorebook included (JSON and PNG)", async () => {
    const original = await imported(fixture.alice, pngCard({ ccv3: v3Card() }));
    const json = await cardJson(fixture.alice, original.id);
    const fromJson = await imported(fixture.alice, JSON.stringify(json), "again.json");
    const png = await exportCard(fixture.service, fixture.alice, original.id, "png");
    expect(png.status).toBe(200);
    expect(png.headers.get("content-type")).toBe("image/png");
    const bytes = Buffer.from(await png.arrayBuffer());
    const chunks = cardChunks(bytes);
    expect(chunks.ccv3).toEqual(json);
    expect(chunks.chara).toMatchObject({ spec: "chara_card_v2", data: { name: NAME, character_book: json.data.character_book } });
    const fromPng = await imported(fixture.alice, bytes);
    const same = ({ name, description, instructions, greeting_message, category, voice_id, model, is_public }: Record<string, unknown>) => ({ name, description, instructions, greeting_message, category, voice_id, model, is_public });
    expect(same(fromJson)).toEqual(same(original));
    expect(same(fromPng)).toEqual(same(original));
    expect(await cardJson(fixture.alice, fromJson.id)).toEqual(json);
    expect(await cardJson(fixture.alice, fromPng.id)).toEqual(json);
    // The exported PNG is the stored avatar (8x8), not a plain image.
    expect(cardChunks((await fetchPng(fixture.service, fromPng.avatar_url)).bytes)).toEqual({});
  });

  it("exports edited instructions as the system prompt alone, which imports back to the same instructions", async () => {
    const original = await imported(fixture.alice, JSON.stringify(v2Card()), "nova.json");
    const edited = "You are Nova. Ünïcödé rules 🚀.\n\n## Notes\nBe brief.";
    const update = await fixture.service.clientFor(fixture.alice).PUT("/v1/personas/{id}", {
      params: { path: { id: original.id } },
      body: { instructions: edited, category: "tutor", voice_id: "nova" },
    });
    expect(update.response.status).toBe(200);
    const card = await cardJson(fixture.alice, original.id);
    expect(card.data).toMatchObject({ system_prompt: edited, description: original.description, personality: "", scenario: "" });
    const again = await imported(fixture.alice, JSON.stringify(card), "edited.json");
    expect(again).toMatchObject({ instructions: edited, description: original.description, category: "tutor", voice_id: "nova" });
  });

  it("exports a persona made without a card, as a plain PNG with both chunks", async () => {
    const made = await fixture.service.clientFor(fixture.alice).POST("/v1/personas", { body: { name: "Plain", instructions: "You are Plain.", greeting_message: "Hello." } });
    const persona = made.data!;
    const png = await exportCard(fixture.service, fixture.alice, persona.id, "png");
    const chunks = cardChunks(Buffer.from(await png.arrayBuffer()));
    expect(chunks.ccv3).toMatchObject({ spec: "chara_card_v3", data: { name: "Plain", system_prompt: "You are Plain.", first_mes: "Hello.", alternate_greetings: [], tags: [] } });
    expect(chunks.chara).toMatchObject({ spec: "chara_card_v2", data: { name: "Plain" } });
    expect(await cardJson(fixture.alice, persona.id)).toEqual(chunks.ccv3);
  });

  it("gives another user only a public persona's public fields, and 404 for a private one", async () => {
    const bob = await registerUser(fixture.service);
    await creatorPlan(bob);
    const persona = await imported(fixture.alice, JSON.stringify(v3Card()), "nova.json");
    await expectError(await exportCard(fixture.service, bob, persona.id), 404, "not_found");
    await expectError(await exportCard(fixture.service, bob, persona.id, "png"), 404, "not_found");
    await fixture.service.clientFor(fixture.alice).PUT("/v1/personas/{id}", { params: { path: { id: persona.id } }, body: { is_public: true } });
    const { data } = await cardJson(bob, persona.id);
    expect(data).toMatchObject({ name: NAME, description: persona.description, first_mes: persona.greeting_message, system_prompt: "", personality: "", scenario: "", post_history_instructions: "", mes_example: "", tags: v3Card().data.tags, creator_notes: v3Card().data.creator_notes });
    expect(data.character_book).toBeUndefined();
    expect(data.extensions).toEqual({ persona: { category: "character", voice_id: "alloy" } });
    const png = cardChunks(Buffer.from(await (await exportCard(fixture.service, bob, persona.id, "png")).arrayBuffer()));
    expect(png.ccv3).toEqual({ spec: "chara_card_v3", spec_version: "3.0", data });
  });

  it("404 for a persona that does not exist; 400 for an unknown format", async () => {
    await expectError(await exportCard(fixture.service, fixture.alice, "0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a99"), 404, "not_found");
    await expectError(await fixture.service.fetch(`/v1/personas/0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a99/card?format=gif`, { headers: fixture.alice.auth }), 400, "invalid_request");
  });
});

describe("account data", () => {
  it("exports the card rows and deletes the avatar files with the account", async () => {
    const carol = await registerUser(fixture.service);
    const persona = await imported(carol, pngCard({ ccv3: v3Card() }));
    const knex = fixture.service.services.db.knex;
    const archive = await archiveOf(fixture.service.services, carol.id);
    expect(archive.persona_cards).toEqual([expect.objectContaining({ persona_id: persona.id, creator: "mara" })]);
    expect(archive.card_avatars).toEqual([expect.objectContaining({ persona_id: persona.id })]);
    const path = pathOf(persona.avatar_url);
    expect((await fixture.service.fetch(path)).status).toBe(200);
    await knex("users").where({ id: carol.id }).update({ deleted_at: new Date(Date.now() - 31 * 24 * 3600 * 1000) });
    await purgeDeletedAccounts(fixture.service.services);
    expect((await fixture.service.fetch(path)).status).toBe(404);
  });
});
