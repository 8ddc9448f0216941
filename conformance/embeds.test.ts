import { beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { createPersona, registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { idOr, PLACEHOLDER_ID } from "./support/placeholders.ts";
import { parseSse } from "../test/support/sse.ts";
import { target } from "./support/target.ts";

// The embeddable persona (docs/design/embeds.md): the owner's settings, then a visitor on an
// allowed site (a page calling from its own origin, so `Origin` is what is checked), and the
// loader, chat script and chat page.
const SITE = "https://shop.example";

describe("embeds", () => {
  let owner: TestUser;
  let personaId: string | undefined;
  let token = "eg_q2JX1mN4T0dCkz8sW3yVbE6hL9pR5uAaFfGgHhJjKk";
  let generationId: string | undefined;
  let replyId: string | undefined;
  const guest = () => ({ origin: SITE, "x-embed-guest": token });

  beforeAll(async () => {
    owner = await registerUser("embeds");
    personaId = await createPersona(owner, { is_public: true });
  });

  op("persona_embeds_update", async () => {
    const answer = await call("persona_embeds_update", { token: owner.token, path: { id: idOr(personaId) }, json: { enabled: true, allowed_origins: [SITE], daily_message_cap: 50 }, expect: [200] });
    if (target.stateful) expect(answer.json).toMatchObject({ enabled: true, allowed_origins: [SITE] });
  });

  op("persona_embeds_get", async () => {
    await call("persona_embeds_get", { token: owner.token, path: { id: idOr(personaId) }, expect: [200] });
  });

  op("embeds_create_guest", async () => {
    const answer = await call("embeds_create_guest", { path: { persona_id: idOr(personaId) }, headers: { origin: SITE }, expect: [201] });
    const created = answer.json as { token?: string } | undefined;
    if (target.stateful && created?.token) token = created.token;
  });

  op("embeds_stream", async () => {
    const answer = await call("embeds_stream", {
      path: { persona_id: idOr(personaId) },
      headers: { ...guest(), accept: "text/event-stream" },
      json: { content: "Do you ship to Norway?" },
      expect: [200],
    });
    if (!target.stateful || answer.status !== 200) return;
    const events = parseSse(answer.text).events;
    expect(events.at(-1)?.event).toBe("done");
    generationId = (JSON.parse(events[0]!.data) as { generation_id?: string }).generation_id;
    replyId = (JSON.parse(events.at(-1)!.data) as { message_id?: string }).message_id;
  }, 60_000);

  op("embeds_transcript", async () => {
    await call("embeds_transcript", { path: { persona_id: idOr(personaId) }, headers: guest(), expect: [200] });
  });

  op("embeds_stop", async () => {
    // The reply is done by now: stopping it answers the finished generation.
    await call("embeds_stop", { path: { persona_id: idOr(personaId), generation_id: generationId ?? PLACEHOLDER_ID }, headers: guest(), expect: [200, 404] });
  });

  op("embeds_speech", async () => {
    await call("embeds_speech", { path: { persona_id: idOr(personaId) }, headers: guest(), json: { message_id: replyId ?? PLACEHOLDER_ID }, expect: [200] });
  }, 60_000);

  op("persona_embeds_conversations", async () => {
    const answer = await call("persona_embeds_conversations", { token: owner.token, path: { id: idOr(personaId) }, expect: [200] });
    if (target.stateful) expect((answer.json as { total: number }).total).toBeGreaterThanOrEqual(1);
  });

  op("embed_pages_loader", async () => {
    await call("embed_pages_loader", { expect: [200] });
  });

  op("embed_pages_chat_script", async () => {
    await call("embed_pages_chat_script", { expect: [200] });
  });

  op("embed_pages_chat_page", async () => {
    // Framed by the allowed site (what a browser says of an iframe's request).
    await call("embed_pages_chat_page", { path: { id: idOr(personaId) }, headers: { "sec-fetch-dest": "iframe" }, expect: [200] });
  });
});
