import { beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { idOr } from "./support/placeholders.ts";
import { target } from "./support/target.ts";

// Character cards (issue 22): import a V2 card with a lorebook, export it as V3 JSON and as a PNG.
const CARD = {
  spec: "chara_card_v2",
  spec_version: "2.0",
  data: {
    name: "Captain Nova",
    description: "A retired starship captain who explains astronomy with stories from the bridge.",
    personality: "Warm and patient.",
    scenario: "",
    first_mes: "Welcome aboard, cadet!",
    mes_example: "",
    creator_notes: "",
    system_prompt: "You are {{char}}.",
    post_history_instructions: "",
    alternate_greetings: ["Ahoy!"],
    tags: ["space"],
    creator: "conformance",
    character_version: "1.0",
    extensions: {},
    character_book: { extensions: {}, entries: [{ keys: ["Vega"], content: "Vega is 25 light-years away.", extensions: {}, enabled: true, insertion_order: 0 }] },
  },
};

function cardFile(): FormData {
  const form = new FormData();
  form.append("file", new Blob([JSON.stringify(CARD)], { type: "application/json" }), "nova.json");
  return form;
}

describe("cards", () => {
  let user: TestUser;
  let personaId: string | undefined;

  beforeAll(async () => {
    user = await registerUser("cards");
  });

  op("cards_import", async () => {
    const answer = await call("cards_import", { token: user.token, multipart: cardFile(), expect: [201] });
    personaId = (answer.json as { id?: string } | undefined)?.id;
    if (target.stateful) expect(answer.json).toMatchObject({ name: "Captain Nova", greeting_message: "Welcome aboard, cadet!" });
  });

  op("cards_export", async () => {
    const json = await call("cards_export", { token: user.token, path: { id: idOr(personaId) }, query: { format: "json" }, expect: [200] });
    if (target.stateful) expect(json.json).toMatchObject({ spec: "chara_card_v3", data: { name: "Captain Nova", tags: ["space"] } });
    const png = await call("cards_export", { token: user.token, path: { id: idOr(personaId) }, query: { format: "png" }, expect: [200] });
    if (!target.stateful) return;
    expect(png.contentType).toBe("image/png");
    expect(Array.from(png.bytes.subarray(0, 4))).toEqual([0x89, 0x50, 0x4e, 0x47]);
  });
});
